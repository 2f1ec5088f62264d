"""axolotl and TRL configs checked as they are: mapped with each tool's defaults, findings at the
original file, line and key, unmodelled keys listed once, Hub ids and random splits refused."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.support.paths import DATA
from tunegate.gate import check
from tunegate.spec.model import Spec
from tunegate.spec.check import parse_spec

CONFIGS = DATA / "configs"
AXOLOTL, TRL = CONFIGS / "axolotl", CONFIGS / "trl"


def places(report):
    return [f"{f.place()} {f.code}" for f in report.findings]


def data_problems(parsed) -> set[str]:
    """The codes of why a split's data cannot be had: the dataset stage's findings, not the spec stage's."""
    return {f.code for f in parsed.unavailable.values()}


def test_an_axolotl_config_is_detected_mapped_with_its_own_defaults_and_passes_every_static_stage():
    parsed = parse_spec(AXOLOTL / "lora-1b.yml")
    assert parsed.kind == "axolotl"
    # its adamw_8bit needs bitsandbytes where axolotl runs it, not where this check runs: named, not refused
    assert not [f for f in parsed.result.findings if f.severity == "error"]
    if importlib.util.find_spec("bitsandbytes") is None:
        assert [(f.code, f.severity, f.line) for f in parsed.result.findings if f.code == "TG161"] == [
            ("TG161", "info", 40)]
    spec = parsed.require()
    assert (spec.model.id, spec.model.quantization, spec.model.pad_token) == (
        "meta-llama/Llama-3.2-1B", "none", "<|end_of_text|>")
    t = spec.training
    assert (t.optimizer, t.lr_scheduler, t.warmup_steps, t.packing, t.max_seq_len, t.attention) == (
        "adamw_8bit", "cosine", 10, True, 2048, "flash_attention_2")
    assert (t.micro_batch_size, t.grad_accum_steps, t.epochs, t.seed, t.loss_on) == (2, 2, 1.0, 42, "replies")
    assert spec.lora.target_modules[:2] == ["gate_proj", "down_proj"] and spec.data.format == "messages"
    report = check(parsed)
    assert report.gates_passed, places(report)
    assert [s.status for s in report.stages] == ["passed"] * 4


def test_keys_tunegate_does_not_model_are_listed_once_as_not_checked():
    [note] = [f for f in parse_spec(AXOLOTL / "lora-1b.yml").result.findings if f.code == "TG140"]
    assert note.severity == "info"
    assert note.message.endswith("group_by_length, loss_watchdog_threshold, loss_watchdog_patience")
    assert "lora_model_dir" not in note.message  # a key set to null changes nothing


def test_a_finding_names_the_original_file_line_and_key():
    report = check(AXOLOTL / "lora-1b-bad-dropout.yml")
    assert f"{AXOLOTL / 'lora-1b-bad-dropout.yml'}:24:1 (lora_dropout) TG103" in places(report)
    assert not report.gates_passed


def test_the_published_axolotl_example_gets_its_two_data_problems_at_once_with_every_other_check():
    report = check(AXOLOTL / "lora-1b-upstream.yml")
    shown = places(report)
    assert [f.code for f in report.stage("dataset").findings] == ["TG142", "TG141"]
    assert f"{AXOLOTL / 'lora-1b-upstream.yml'}:9:5 (datasets.0.path) TG142" in shown
    assert f"{AXOLOTL / 'lora-1b-upstream.yml'}:12:1 (val_set_size) TG141" in shown
    # not dozens of unknown keys: the one warning is the estimate's, not run here
    assert [f.code for f in report.findings if f.severity == "warning"] == ["TG404"]
    # the spec passed and the estimate was tried (NousResearch's mirror of Llama-3.2-1B has no config on
    # this disk: TG404, not run here); the stage that reads both files did not run
    assert [s.status for s in report.stages[:3]] == ["passed", "failed", "skipped"], places(report)
    assert "cannot be had here" in report.stage("overlap").reason
    assert [f.code for f in report.stage("estimate").findings] == ["TG404"]


def test_qlora_on_sharegpt_fields_maps_to_4bit_and_the_sharegpt_format():
    spec = Spec.model_validate(parse_spec(AXOLOTL / "qlora-sharegpt.yml").raw)  # as mapped, before the rules
    assert (spec.model.quantization, spec.data.format, spec.lora.target_modules) == ("4bit", "sharegpt", "all-linear")
    assert (spec.training.optimizer, spec.training.warmup_ratio) == ("paged_adamw_8bit", 0.1)
    # bitsandbytes is a requirement of the machine axolotl runs on, listed in the report, never an error here
    report = check(AXOLOTL / "qlora-sharegpt.yml")
    assert not [f for f in report.findings if f.severity == "error"] and report.gates_passed
    needs = {r.need: r for r in report.requirements}
    assert needs["bitsandbytes"].where == "run machine" and needs["bitsandbytes"].key == "load_in_4bit"
    assert needs["bitsandbytes"].met_here == (importlib.util.find_spec("bitsandbytes") is not None)
    assert "a CUDA GPU" in needs


def test_a_trl_sft_config_maps_trl_defaults_and_its_folder_splits():
    parsed = parse_spec(TRL / "sft.yaml")
    spec = parsed.require()
    assert parsed.kind == "trl"
    assert spec.data.train.name == "train.jsonl" and spec.data.validation.name == "test.jsonl"
    t = spec.training
    assert (t.learning_rate, t.micro_batch_size, t.grad_accum_steps, t.max_seq_len) == (1e-4, 2, 8, 2048)
    assert (t.warmup_steps, t.warmup_ratio, t.seed, spec.lora.target_modules) == (0, 0.03, 42, "all-linear")
    report = check(parsed)
    assert report.gates_passed, places(report)
    assert report.stage("dataset").stats["train"]["format"] == "prompt_completion"


def test_the_published_trl_example_is_a_full_fine_tune_on_a_hub_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # neither the dataset nor Qwen2.5-0.5B's config cached
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    report = check(TRL / "example_config.yaml")
    assert sorted(f.code for f in report.findings) == ["TG142", "TG144", "TG404"]
    assert [f.severity for f in report.findings if f.code == "TG144"] == ["warning"]  # trl sft runs it
    assert f"{TRL / 'example_config.yaml'}:9:1 (dataset_name) TG142" in places(report)


def test_a_trl_value_out_of_range_is_named_by_its_trl_key():
    assert f"{TRL / 'sft-bad-alpha.yaml'}:9:1 (lora_alpha) TG103" in places(check(TRL / "sft-bad-alpha.yaml"))


def test_from_overrides_the_detected_kind():
    result = parse_spec(TRL / "sft.yaml", kind="axolotl").result
    assert {"TG152", "TG144"} <= {f.code for f in result.findings}  # no base_model, no adapter: not an axolotl file


def test_a_hub_dataset_in_the_local_hub_cache_is_read_from_there(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "datasets--acme--support-chats" / "snapshots" / "0123abc" / "data"
    snapshot.mkdir(parents=True)
    shutil.copy(CONFIGS / "data" / "trl_support" / "train.jsonl", snapshot / "train-00000-of-00001.jsonl")
    shutil.copy(CONFIGS / "data" / "trl_support" / "test.jsonl", snapshot / "test-00000-of-00001.jsonl")
    config = tmp_path / "sft.yaml"
    config.write_text((TRL / "sft.yaml").read_text().replace("../data/trl_support", "acme/support-chats"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    report = check(config)
    assert report.gates_passed, places(report)
    assert [f.code for f in report.findings if f.code == "TG148"] == ["TG148", "TG148"]
    assert report.stage("dataset").stats["train"]["records"] == 40


@pytest.mark.parametrize(("text", "code"), [
    ("val_set_size: 0.05\n", "TG141"), ("", "TG143"),
])
def test_an_axolotl_config_without_a_frozen_validation_file_is_refused_by_the_dataset_stage(tmp_path, text, code):
    body = (AXOLOTL / "lora-1b.yml").read_text().replace("../data", str(CONFIGS / "data"))
    body = body.replace("test_datasets:\n  - path: " + str(CONFIGS / "data") + "/val.jsonl\n    type: chat_template\n"
                        "    split: train\n", "").replace("val_set_size: 0.0\n", text)
    (tmp_path / "cfg.yml").write_text(body)
    parsed = parse_spec(tmp_path / "cfg.yml")
    assert data_problems(parsed) == {code} and parsed.result.status == "passed"
    assert "TG104" not in {f.code for f in parsed.result.findings}  # said once, by the import's own finding
    report = check(parsed)
    assert [f.code for f in report.stage("dataset").findings if f.severity == "error"] == [code]
    assert report.stage("dataset").stats["train"]["records"] == 40  # the training file is still checked
    assert report.stage("estimate").status == "passed" and not report.gates_passed


@pytest.mark.parametrize(("config", "keys"), [(AXOLOTL / "lora-1b-unhonoured.yml", ("optimizer", "lr_scheduler")),
                                              (TRL / "sft-unhonoured.yaml", ("optim", "lr_scheduler_type"))])
def test_an_optimizer_or_scheduler_the_full_run_cannot_honour_is_a_warning_at_its_key(config, keys):
    findings = [f for f in parse_spec(config).result.findings if f.code == "TG147"]
    assert [f.key for f in findings] == list(keys)
    assert all(f.severity == "warning" and f.line and f.hint.startswith("Use one of: ") for f in findings)
    assert all("tunegate launch cannot" in f.message for f in findings)


def test_an_axolotl_config_with_digit_groups_reads_them_as_axolotl_does():
    parsed = parse_spec(AXOLOTL / "lora-long-context-digit-groups.yml")
    assert not [f for f in parsed.result.findings if f.severity == "error"], parsed.result.findings
    t = parsed.require().training
    assert (t.max_seq_len, t.warmup_steps) == (16384, 10)
    assert t.learning_rate == pytest.approx(2e-4)


def test_an_axolotl_config_in_pure_fp16_trains_in_fp16_with_flash_attention():
    # `float16: true` with the AMP flags off: fp16 weights, so flash attention is no TG111.
    parsed = parse_spec(AXOLOTL / "lora-pure-fp16.yml")
    assert not [f for f in parsed.result.findings if f.severity == "error"], parsed.result.findings
    assert parsed.require().training.precision == "fp16"


def test_a_full_fine_tune_is_judged_as_one_for_axolotl_and_refused_by_tunegate_launch():
    parsed = parse_spec(AXOLOTL / "full-finetune-350m.yml")
    findings = parsed.result.findings
    assert [(f.code, f.severity) for f in findings if f.severity != "info"] == [("TG144", "warning")]
    assert parsed.spec.training.method == "full" and "TG150" not in {f.code for f in findings}  # no adapters
    assert [" TG144 " in r for r in parsed.result.stats["tunegate_launch"]] == [True]


@pytest.mark.parametrize(("config", "key"), [("dpo-lora-1b.yml", "rl"), ("reward-model-lora.yml", "reward_model")])
def test_an_objective_other_than_supervised_fine_tuning_is_refused_at_its_key(config, key):
    findings = parse_spec(AXOLOTL / config).result.findings
    [objective] = [f for f in findings if f.code == "TG147"]
    assert objective.key == key and objective.severity == "error"


def test_a_trl_target_modules_string_is_a_regex_tunegate_does_not_run_not_a_module_name():
    findings = parse_spec(TRL / "sft-regex-targets.yaml").result.findings
    [regex] = [f for f in findings if f.code == "TG147"]
    assert (regex.key, regex.severity) == ("lora_target_modules", "warning")


def test_local_copies_given_on_the_command_line_replace_a_trl_configs_uncached_hub_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))  # the Hub id is in no cache
    config = TRL / "sft-hub-dataset.yaml"
    assert "TG142" in data_problems(parse_spec(config))  # without them: cannot be read
    copies = CONFIGS / "data" / "trl_support"
    report = check(config, train=copies / "train.jsonl", validation=copies / "test.jsonl")
    spec_stage = report.stage("spec")
    assert spec_stage.status == "passed", places(report)
    said = [f for f in spec_stage.findings if f.code == "TG157"]
    assert [(f.severity, f.key, f.line) for f in said] == [("info", "dataset_name", 3)] * 2
    assert "acme/support-chats-v3" in said[0].message and "--train" in said[0].message
    assert report.stage("dataset").stats["train"]["records"] == 40


def test_a_validation_file_given_replaces_an_axolotl_configs_random_split(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    config = AXOLOTL / "lora-hub-datasets.yml"
    assert data_problems(parse_spec(config)) == {"TG141", "TG142"}
    data = CONFIGS / "data"
    parsed = parse_spec(config, data={"train": data / "train.jsonl", "validation": data / "val.jsonl"})
    assert not [f for f in parsed.result.findings if f.severity == "error"], [f"{f.place()} {f.code}" for f in parsed.result.findings]
    assert {f.key for f in parsed.result.findings if f.code == "TG157"} == {"datasets.0.path", "test_datasets"}
    assert (parsed.require().data.train, parsed.require().data.validation) == (data / "train.jsonl", data / "val.jsonl")


def test_a_training_file_alone_leaves_the_configs_missing_validation_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    parsed = parse_spec(AXOLOTL / "lora-hub-datasets.yml", data={"train": CONFIGS / "data" / "train.jsonl"})
    assert not [f for f in parsed.result.findings if f.severity == "error"]
    assert data_problems(parsed) == {"TG141"} and set(parsed.unavailable) == {"validation"}
    report = check(parsed)
    assert report.stage("dataset").stats["train"]["records"] == 40
    assert [f.code for f in report.stage("dataset").findings if f.severity == "error"] == ["TG141"]



def test_an_axolotl_dataset_of_ds_type_csv_gets_the_verdict_of_its_jsonl_copy(tmp_path):
    body = (AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("../data", str(CONFIGS / "data"))
    (tmp_path / "csv.yml").write_text(body)
    (tmp_path / "jsonl.yml").write_text(body.replace(".csv\n", ".jsonl\n").replace("ds_type: csv", "ds_type: json"))
    csv, jsonl = (check(parse_spec(tmp_path / name)) for name in ("csv.yml", "jsonl.yml"))
    assert csv.stage("dataset").stats["train"]["container"] == "csv"
    assert [(s.name, s.status) for s in csv.stages] == [(s.name, s.status) for s in jsonl.stages]
    assert [s.status for s in csv.stages] == ["passed"] * 4
    assert [f.code for f in csv.findings] == [f.code for f in jsonl.findings]
    assert csv.stage("dataset").stats["train"]["records"] == jsonl.stage("dataset").stats["train"]["records"] == 16


def test_a_trl_dataset_folder_of_csv_splits_is_read_as_load_dataset_reads_it(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text((TRL / "sft.yaml").read_text().replace("../data/trl_support", str(CONFIGS / "data" / "pc_csv")))
    report = check(config)
    stats = report.stage("dataset").stats
    assert report.stage("dataset").status == "passed", places(report)
    read = [(stats[role]["container"], stats[role]["format"], stats[role]["records"])
            for role in ("train", "validation")]
    assert read == [("csv", "prompt_completion", 16), ("csv", "prompt_completion", 6)]


def _saved_config(tmp_path, train: str, test: str, split: str = "test"):
    body = (AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("    ds_type: csv\n", "")
    body = body.replace("../data/alpaca_train.csv", str(CONFIGS / "data" / train)).replace(
        "../data/alpaca_val.csv", str(CONFIGS / "data" / test)).replace("split: train", f"split: {split}")
    (tmp_path / "saved.yml").write_text(body)
    return tmp_path / "saved.yml"


def test_an_axolotl_dataset_folder_from_save_to_disk_is_read_as_load_from_disk_reads_it(tmp_path):
    parsed = parse_spec(_saved_config(tmp_path, "alpaca_saved", "alpaca_saved"))
    report = check(parsed)
    stats = report.stage("dataset").stats
    assert [s.status for s in report.stages] == ["passed"] * 4, places(report)
    assert [(stats[r]["container"], stats[r]["format"], stats[r]["records"]) for r in ("train", "validation")] == [
        ("arrow", "alpaca", 16), ("arrow", "alpaca", 6)]
    saved = CONFIGS / "data" / "alpaca_saved"
    assert parsed.raw["data"]["validation"] == str(saved / "test" / "data-00000-of-00001.arrow")


def test_a_save_to_disk_split_in_several_shards_is_read_as_one_split_as_load_from_disk_reads_it(tmp_path):
    parsed = parse_spec(_saved_config(tmp_path, "alpaca_saved_shards", "alpaca_saved"))
    shards = CONFIGS / "data" / "alpaca_saved_shards"
    assert parsed.raw["data"]["train"] == [str(shards / "data-00000-of-00002.arrow"),
                                           str(shards / "data-00001-of-00002.arrow")]  # state.json's order
    report = check(parsed)
    assert [s.status for s in report.stages] == ["passed"] * 4, places(report)
    stats = report.stage("dataset").stats["train"]
    assert [(Path(s["file"]).name, s["records"]) for s in stats["files"]] == [
        ("data-00000-of-00002.arrow", 8), ("data-00001-of-00002.arrow", 8)]
    assert (stats["records"], stats["container"], stats["format"]) == (16, "arrow", "alpaca")


def test_a_trl_dataset_name_saved_by_save_to_disk_is_refused_as_load_dataset_refuses_it(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text((TRL / "sft.yaml").read_text().replace("../data/trl_support",
                                                             str(CONFIGS / "data" / "alpaca_saved_train")))
    [finding] = [f for f in parse_spec(config).result.findings if f.code == "TG146"]
    assert "Please use `load_from_disk` instead." in finding.message


def test_an_axolotl_ds_type_that_is_not_what_the_file_is_is_an_error_at_its_key(tmp_path):
    body = (AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("../data", str(CONFIGS / "data"))
    (tmp_path / "cfg.yml").write_text(body.replace("    ds_type: csv\n", "    ds_type: json\n", 1))
    result = parse_spec(tmp_path / "cfg.yml").result
    [finding] = [f for f in result.findings if f.code == "TG145"]
    assert finding.key == "datasets.0.ds_type" and "alpaca_train.csv is CSV" in finding.message
    assert "Set ds_type: csv" in finding.hint and result.status == "failed"


def test_a_dataset_folder_of_tsv_splits_is_read_with_tabs_for_trl_and_for_axolotl(tmp_path):
    folder = CONFIGS / "data" / "pc_tsv"
    trl = tmp_path / "sft.yaml"
    trl.write_text((TRL / "sft.yaml").read_text().replace("../data/trl_support", str(folder)))
    axolotl = tmp_path / "axolotl.yml"
    axolotl.write_text((AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("    ds_type: csv\n", "").replace(
        "../data/alpaca_train.csv", str(folder)).replace("../data/alpaca_val.csv", str(folder)).replace(
        "split: train", "split: test"))
    report = check(trl)
    assert report.stage("dataset").status == "passed", places(report)
    assert report.stage("dataset").stats["validation"]["records"] == 6
    parsed = parse_spec(axolotl)
    assert parsed.raw["data"]["train"] == str(folder / "train.tsv")
    assert "TG145" not in {f.code for f in parsed.result.findings if f.key and f.key.endswith(".path")}


def test_an_axolotl_path_to_a_tsv_file_is_refused_as_axolotl_cannot_read_it(tmp_path):
    body = (AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("    ds_type: csv\n", "").replace(
        "../data/alpaca_train.csv", str(CONFIGS / "data" / "pc_tsv" / "train.tsv"))
    (tmp_path / "cfg.yml").write_text(body.replace("../data", str(CONFIGS / "data")))
    [finding] = [f for f in parse_spec(tmp_path / "cfg.yml").result.findings if f.code == "TG145"]
    assert finding.key == "datasets.0.path" and "tab-separated" in finding.message


@pytest.mark.parametrize("style", ["chat", "chatml", "phi", "instruct"])
def test_an_axolotl_alpaca_prompt_style_reads_the_same_alpaca_records(tmp_path, style):
    # axolotl's `type: alpaca:chat` (archived/falcon/config-7b.yml, phi/phi3-ft.yml's alpaca:phi): the
    # type's base names the records, the part after ':' only the prompt layout (prompters.PromptStyle)
    body = (AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("../data", str(CONFIGS / "data"))
    (tmp_path / "plain.yml").write_text(body)
    (tmp_path / "styled.yml").write_text(body.replace("type: alpaca", f"type: alpaca:{style}"))
    plain, styled = (check(parse_spec(tmp_path / name)) for name in ("plain.yml", "styled.yml"))
    assert [s.status for s in styled.stages] == ["passed"] * 4, places(styled)
    assert styled.stage("dataset").stats["train"]["format"] == "alpaca"
    assert [f.code for f in styled.findings] == [f.code for f in plain.findings]


def test_an_axolotl_alpaca_type_with_a_style_axolotl_does_not_have_is_still_refused(tmp_path):
    body = (AXOLOTL / "lora-alpaca-csv.yml").read_text().replace("../data", str(CONFIGS / "data"))
    (tmp_path / "styled.yml").write_text(body.replace("type: alpaca", "type: alpaca:vicuna"))
    parsed = parse_spec(tmp_path / "styled.yml")
    report = check(parsed)
    said = [(f.code, f.message.split(":")[0]) for f in report.findings if f.severity == "error"]
    assert ("TG145", "dataset type 'alpaca") in said, said  # 'alpaca:vicuna' is not one axolotl knows
    assert not report.config_trainer.passed  # axolotl stops on it


def _full_fine_tune(tmp_path, name: str, precision: str = "bf16: auto", config: str = "lora-1b.yml") -> Spec:
    body = (AXOLOTL / config).read_text().replace("adapter: lora\n", "").replace("bf16: auto", precision)
    (tmp_path / name).write_text(body.replace("../data", str(CONFIGS / "data")))
    return Spec.model_validate(parse_spec(tmp_path / name).raw)  # as mapped, before the rules


@pytest.mark.parametrize("precision", ["bf16: true", "bf16: auto", "bfloat16: true"])
def test_an_axolotl_full_fine_tune_in_bf16_keeps_no_fp32_master_copy(tmp_path, precision):
    # axolotl loads the model in its torch_dtype (bf16), so gradients and AdamW's moments are bf16 too:
    # mistral/config.yml was estimated at 86.9 GiB with fp32 weights and gradients (TG403), 58 GiB so
    spec = _full_fine_tune(tmp_path, "full.yml", precision)
    assert (spec.training.method, spec.training.precision, spec.training.master_weights) == ("full", "bf16", "none")


def test_an_axolotl_full_fine_tune_under_deepspeed_or_in_fp32_keeps_its_fp32_master_copy(tmp_path):
    deepspeed = _full_fine_tune(tmp_path, "ds.yml", config="lora-deepspeed-zero1.yml")
    fp32 = _full_fine_tune(tmp_path, "fp32.yml", "bf16: false")
    assert (deepspeed.training.method, deepspeed.training.sharding, deepspeed.training.master_weights) == (
        "full", "zero2", "fp32")
    assert (fp32.training.precision, fp32.training.master_weights) == ("fp32", "fp32")
