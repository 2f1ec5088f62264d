"""Configs whose tool would refuse them, or train differently from tunegate's run, are refused at
the original key; configs that mean what tunegate runs are mapped the way the tool reads them."""
from __future__ import annotations

import importlib.util

import pytest

from tests.support.paths import DATA
from tunegate.spec.check import parse_spec
from tunegate.spec.model import Spec

AXOLOTL, TRL = DATA / "configs" / "axolotl", DATA / "configs" / "trl"


def errors(path):
    return [(f.code, f.key, f.line) for f in parse_spec(path).result.findings if f.severity == "error"]


def launch_refusals(path):
    """The warnings of settings the tool runs and tunegate launch does not: (code, key, line)."""
    parsed = parse_spec(path)
    refused = parsed.result.stats["tunegate_launch"]
    found = [(f.code, f.key, f.line) for f in parsed.result.findings if f.severity == "warning" and f.code == "TG147"]
    assert len(refused) == len(found) and all(" TG147 " in r for r in refused)
    return found


def mapped(path):
    return Spec.model_validate(parse_spec(path).raw)  # as mapped, before the rules


def test_the_legacy_sharegpt_type_axolotl_refuses_is_refused_at_each_dataset():
    assert errors(AXOLOTL / "sharegpt-legacy-type.yml") == [("TG154", "datasets.0.type", 6),
                                                              ("TG154", "test_datasets.0.type", 10)]


def test_the_same_sharegpt_records_through_chat_template_with_default_roles_pass_the_spec():
    parsed = parse_spec(AXOLOTL / "chat-template-sharegpt-roles.yml")
    assert parsed.valid and parsed.spec.data.format == "sharegpt"
    [note] = [f for f in parsed.result.findings if f.code == "TG140"]
    assert "roles_to_train" not in note.message and "train_on_eos" not in note.message  # axolotl's defaults


def test_qlora_without_load_in_4bit_is_refused_as_axolotl_refuses_it():
    assert ("TG154", "adapter", 4) in errors(AXOLOTL / "qlora-without-4bit.yml")


def test_training_user_turns_or_every_eos_is_a_launch_refusal_at_the_dataset_keys():
    config = AXOLOTL / "roles-to-train-user.yml"
    assert errors(config) == []  # axolotl runs it
    assert launch_refusals(config) == [("TG147", "datasets.0.roles_to_train", 9), ("TG147", "datasets.0.train_on_eos", 10)]


@pytest.mark.parametrize(("config", "key", "line"), [(AXOLOTL / "lora-dora.yml", "peft_use_dora", 34),
                                                      (TRL / "sft-use-dora.yaml", "use_dora", 19)])
def test_dora_which_tunegate_does_not_apply_is_a_launch_refusal_not_listed_as_unchecked(config, key, line):
    assert errors(config) == [] and launch_refusals(config) == [("TG147", key, line)]


def test_added_tokens_are_a_launch_refusal_and_a_chat_template_override_is_a_warning():
    findings = parse_spec(AXOLOTL / "chatml-added-tokens.yml").result.findings
    assert [(f.code, f.severity, f.key) for f in findings if f.code in ("TG147", "TG156")] == [
        ("TG156", "warning", "chat_template"), ("TG147", "warning", "tokens")]
    [note] = [f for f in findings if f.code == "TG140"]
    assert "special_tokens.eos_token" in note.message  # no longer dropped without a word


def test_a_regex_string_of_target_modules_is_a_launch_refusal_and_all_linear_is_all_linear():
    assert launch_refusals(AXOLOTL / "lora-regex-targets.yml") == [("TG147", "lora_target_modules", 33)]
    assert mapped(AXOLOTL / "lora-all-linear-string.yml").lora.target_modules == "all-linear"


def test_the_older_batch_size_sets_gradient_accumulation_as_axolotl_derives_it():
    assert mapped(AXOLOTL / "lora-batch-size.yml").training.grad_accum_steps == 32 // 2


def test_path_json_with_local_data_files_names_the_path_and_the_axolotl_way():
    [first, _] = [f for f in parse_spec(AXOLOTL / "path-json-data-files.yml").result.findings if f.code == "TG145"]
    assert (first.key, first.line) == ("datasets.0.path", 5)
    assert "ds_type: json" in first.hint


def test_mistyped_keys_are_errors_with_the_key_meant_and_no_second_missing_key_finding():
    findings = parse_spec(AXOLOTL / "lora-typo-keys.yml").result.findings
    typos = [f for f in findings if f.code == "TG155"]
    assert [(f.key, f.hint.split("?")[0]) for f in typos] == [("learning_rat", "Did you mean 'learning_rate'"),
                                                                ("lora_dropuot", "Did you mean 'lora_dropout'")]
    assert "TG152" not in {f.code for f in findings}


def test_real_axolotl_keys_near_mapped_ones_are_not_typos(tmp_path):
    body = (AXOLOTL / "lora-1b.yml").read_text().replace("../data", str(DATA / "configs" / "data"))
    config = tmp_path / "cfg.yml"
    config.write_text(body + "eval_sample_packing: false\ngradient_checkpointing_kwargs:\n  use_reentrant: false\n"
                      "eval_batch_size: 2\n")
    assert "TG155" not in {f.code for f in parse_spec(config).result.findings}


def test_a_trl_typo_is_an_error_because_trl_sft_refuses_unknown_keys():
    assert errors(TRL / "sft-typo-key.yaml") == [("TG155", "num_train_epoch", 18)]


def test_trl_max_seq_length_is_refused_with_its_new_name():
    [finding] = [f for f in parse_spec(TRL / "sft-max-seq-length.yaml").result.findings if f.code == "TG154"]
    assert (finding.key, finding.hint) == ("max_seq_length", "Rename it: max_length: 4096.")


@pytest.mark.parametrize(("config", "code", "key"), [(TRL / "sft-mixture-json.yaml", "TG143", "datasets"),
                                                      (TRL / "sft-mixture-split.yaml", "TG141", "test_split_size")])
def test_a_trl_datasets_mixture_has_no_frozen_test_split(config, code, key):
    parsed = parse_spec(config)
    assert errors(config) == [] and [(f.code, f.key, f.stage) for f in parsed.unavailable.values()] == [
        (code, key, "dataset")]


def test_deepspeed_is_a_warning_axolotl_runs_with_the_fix_in_axolotl_keys_and_no_single_gpu_warning():
    parsed = parse_spec(AXOLOTL / "lora-deepspeed-zero1.yml")
    findings = parsed.result.findings
    assert [(f.code, f.key, f.severity) for f in findings if f.severity != "info"] == [("TG160", "deepspeed", "warning")]
    assert findings[-1].hint.startswith("Remove deepspeed") and "axolotl runs it" in findings[-1].message
    assert parsed.valid and [" TG160 " in r for r in parsed.result.stats["tunegate_launch"]] == [True]


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes installed: no TG161")
def test_a_run_machine_requirement_names_tool_keys_not_spec_keys():
    [finding] = [f for f in parse_spec(AXOLOTL / "qlora-alpaca.yml").result.findings if f.code == "TG161"]
    assert "model.quantization" not in finding.message + finding.hint
    assert "training.optimizer" not in finding.message + finding.hint


def test_wrong_types_under_the_keys_the_import_reads_are_findings_not_a_crash():
    codes = {c for c, _, _ in errors(AXOLOTL / "hostile-values.yml")}
    assert {"TG145", "TG103"} <= codes
    assert "TG147" in {f.code for f in parse_spec(AXOLOTL / "hostile-values.yml").result.findings}


def test_adam_betas_and_epsilon_are_mapped_not_refused():
    spec = mapped(AXOLOTL / "lora-1b-adam-betas.yml")
    assert (spec.training.adam_beta1, spec.training.adam_beta2, spec.training.adam_epsilon) == (0.9, 0.95, 1e-5)
    assert errors(AXOLOTL / "lora-1b-adam-betas.yml") == []


def test_wrong_types_where_the_axolotl_import_reads_values_are_findings_at_their_keys():
    found = {(c, k) for c, k, _ in errors(AXOLOTL / "hostile-types.yml")}
    assert {("TG102", "optimizer"), ("TG102", "lr_scheduler"), ("TG102", "attn_implementation"),
            ("TG102", "val_set_size"), ("TG102", "datasets.0.message_property_mappings"),
            ("TG102", "datasets.0.split")} <= found


def test_wrong_types_where_the_trl_import_reads_values_are_findings_at_their_keys():
    found = {(c, k) for c, k, _ in errors(TRL / "sft-hostile-types.yaml")}
    assert {("TG102", "warmup_steps"), ("TG102", "max_steps"), ("TG102", "optim"), ("TG102", "lr_scheduler_type"),
            ("TG102", "dataset_test_split")} <= found


def test_a_key_that_is_not_text_in_an_imported_config_is_named_not_checked():
    [note] = [f for f in parse_spec(AXOLOTL / "hostile-types.yml").result.findings if f.code == "TG140"]
    assert "1" in note.message.rsplit(": ", 1)[1].split(", ")
