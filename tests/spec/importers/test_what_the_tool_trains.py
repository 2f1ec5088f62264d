"""What a config's own trainer runs and tunegate does not gate fails the gate, and is never said to be
a reason that trainer refuses the run: another objective (TG147), another adapter (TG144), a dataset type
tunegate does not read (TG145 by the dataset stage), plain text records that trainer trains (TG271), a
dataset registry not on this machine (TG158), memory savers the estimate does not model (TG429). What
the trainer itself refuses still is one (TG154, TG280, a type it does not know).

The configs are published copies (tests/data/configs/published/README.md names each source).
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.gate import check

PUBLISHED = DATA / "configs" / "published"
C4 = (PUBLISHED / "data" / "c4_demo_train.jsonl", PUBLISHED / "data" / "c4_demo_validation.jsonl")
CHATS = (PUBLISHED / "data" / "glaive_chat_train.jsonl", PUBLISHED / "data" / "glaive_chat_validation.jsonl")
ALPACA = (PUBLISHED / "data" / "alpaca_en_demo_train.jsonl", PUBLISHED / "data" / "alpaca_en_demo_validation.jsonl")


@pytest.fixture(autouse=True)
def model_configs(monkeypatch):
    """The base models' config.json in a Hugging Face cache, as `hf download MODEL config.json` leaves it."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(PUBLISHED / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def errors(report) -> list[str]:
    return sorted({f.code for f in report.findings if f.severity == "error"})


def test_trl_sft_on_plain_text_passes_for_trl_and_fails_the_gate():
    report = check(PUBLISHED / "trl" / "clis-sft-imdb.yaml", train=C4[0], validation=C4[1])
    assert errors(report) == ["TG271"] and report.counts["error"] == 50  # every record, each said
    assert report.config_trainer.passed and report.config_trainer.trainer == "trl sft"
    assert not report.gates_passed and not report.tunegate_launch.passed and not report.approved_for_full_run
    # the data cannot be gated, so the stages that read it are skipped; the estimate still runs
    assert report.stage("overlap").status == "skipped" and report.stage("estimate").status == "passed"


def test_trl_sft_refuses_preference_records_among_plain_text(tmp_path):
    mixed = tmp_path / "train.jsonl"
    pair = {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."}
    mixed.write_text(C4[0].read_text(encoding="utf-8") + json.dumps(pair) + "\n", encoding="utf-8")
    report = check(PUBLISHED / "trl" / "clis-sft-imdb.yaml", train=mixed, validation=C4[1])
    assert errors(report) == ["TG271"]
    assert not report.config_trainer.passed  # SFTTrainer stops on the pair (no 'completion', no 'text')


def test_a_tunegate_spec_is_refused_on_plain_text_by_its_own_trainer():
    report = check(train=C4[0], validation=C4[1])
    assert errors(report) == ["TG271"] and report.stage("dataset").stats.get("launch_only") is None


def test_axolotls_completion_type_is_not_read_and_not_refused():
    report = check(PUBLISHED / "axolotl" / "alst-llama3-8b-deepspeed.yaml")
    assert report.config_trainer.passed, report.config_trainer.reasons
    assert not report.gates_passed and not report.approved_for_full_run
    said = {f.code: f for f in report.stage("dataset").findings}
    assert "TG142" in said or "TG145" in said  # the Hub dataset not here, or the type tunegate does not read


def test_axolotls_completion_type_trains_given_plain_text():
    report = check(PUBLISHED / "axolotl" / "alst-llama3-8b-deepspeed.yaml", train=C4[0], validation=C4[1])
    assert errors(report) == ["TG271"] and report.config_trainer.passed


def test_axolotls_completion_type_stops_on_records_without_text():
    report = check(PUBLISHED / "axolotl" / "alst-llama3-8b-deepspeed.yaml", train=CHATS[0], validation=C4[1])
    [no_text] = [f for f in report.findings if f.code == "TG280"]
    assert no_text.file.endswith("glaive_chat_train.jsonl") and no_text.message.startswith("40 of 40 train records")
    assert not report.config_trainer.passed  # axolotl reads 'text' and finds none


def test_a_dataset_type_axolotl_does_not_know_is_its_refusal(tmp_path):
    source = (PUBLISHED / "axolotl" / "llama-3-lora-1b.yml").read_text(encoding="utf-8")
    assert "type: alpaca" in source
    typo = tmp_path / "typo.yml"
    typo.write_text(source.replace("type: alpaca", "type: alpaka"), encoding="utf-8")
    report = check(typo, train=ALPACA[0], validation=ALPACA[1])
    assert "TG145" in errors(report) and not report.config_trainer.passed
    known = tmp_path / "known.yml"
    known.write_text(source.replace("type: alpaca", "type: jeopardy"), encoding="utf-8")
    report = check(known)
    [found] = [f for f in report.findings if f.code == "TG145"]
    assert found.stage == "dataset" and report.config_trainer.passed


def test_an_axolotl_dataset_without_a_type_is_pre_tokenized_data_not_read_here():
    report = check(PUBLISHED / "axolotl" / "orpheus-finetune.yml")  # `type:` left empty, as published
    [found] = [f for f in report.findings if f.code == "TG145"]
    assert found.stage == "dataset" and found.key == "datasets.0.type" and "pre-tokenized" in found.message
    assert report.config_trainer.passed, report.config_trainer.reasons
    assert not report.gates_passed and not report.approved_for_full_run


def test_axolotl_chat_template_fields_of_its_own_are_not_read_here_and_not_refused(tmp_path):
    source = (PUBLISHED / "axolotl" / "llama-3-lora-1b.yml").read_text(encoding="utf-8")
    config = tmp_path / "fields.yml"
    fields = source.replace("type: alpaca", "type: chat_template\n    field_messages: dialogue\n"
                            "    message_property_mappings: {role: speaker, content: text}")
    config.write_text(fields.replace("teknium/GPT4-LLM-Cleaned", str(CHATS[0])), encoding="utf-8")
    report = check(config)
    [found] = [f for f in report.findings if f.code == "TG145"]
    assert found.stage == "dataset" and found.key == "datasets.0.field_messages"
    assert report.config_trainer.passed and not report.gates_passed


def test_axolotl_chat_template_fields_of_its_own_are_said_before_a_hub_dataset_not_cached(tmp_path):
    source = (PUBLISHED / "axolotl" / "llama-3-lora-1b.yml").read_text(encoding="utf-8")
    config = tmp_path / "fields.yml"  # its Hub dataset (teknium/GPT4-LLM-Cleaned) is not in the cache
    config.write_text(source.replace("type: alpaca", "type: chat_template\n    field_messages: dialogue"),
                      encoding="utf-8")
    report = check(config)
    said = {f.code for f in report.stage("dataset").findings}
    assert "TG145" in said and "TG142" not in said  # as for every type tunegate does not read: files not looked for


@pytest.mark.parametrize("fields", ["field_messages: [1]", "message_property_mappings: {role: [from]}"])
def test_axolotl_chat_template_fields_that_are_no_names_are_its_refusal(tmp_path, fields):
    source = (PUBLISHED / "axolotl" / "llama-3-lora-1b.yml").read_text(encoding="utf-8")
    config = tmp_path / "fields.yml"
    config.write_text(source.replace("type: alpaca", f"type: chat_template\n    {fields}"), encoding="utf-8")
    report = check(config)
    assert "TG145" not in {f.code for f in report.findings}
    assert not report.config_trainer.passed  # axolotl's schema takes a name (str) for each


def test_another_objective_fails_the_gate_and_not_axolotl():
    report = check(PUBLISHED / "axolotl" / "ebft-llama-1b-strided.yaml")
    assert "TG147" in errors(report) and report.config_trainer.passed
    assert any(" TG147 rl: 'ebft' " in r for r in report.tunegate_launch.reasons)


def test_an_rl_trainer_axolotl_does_not_know_is_its_refusal(tmp_path):
    config = tmp_path / "rl.yml"
    config.write_text((PUBLISHED / "axolotl" / "ebft-llama-1b-strided.yaml").read_text(encoding="utf-8")
                      .replace("rl: ebft", "rl: dpoo"), encoding="utf-8")
    report = check(config)
    [refused] = [r for r in report.config_trainer.reasons if " TG154 " in r]
    assert "rl: 'dpoo' is not a trainer axolotl knows" in refused


def test_a_freeze_fine_tune_fails_the_gate_and_not_llamafactory():
    report = check(PUBLISHED / "llamafactory" / "llama-pro-llama3-freeze-sft.yaml", train=ALPACA[0],
                   validation=ALPACA[1])
    assert "TG144" in errors(report) and not report.gates_passed
    assert not any(" TG144 " in r for r in report.config_trainer.reasons)
    assert any(" TG144 " in r for r in report.tunegate_launch.reasons)


def test_a_dataset_registry_not_on_this_machine_is_no_refusal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/dataset_info.json here, as on a machine without LLaMA-Factory's checkout
    report = check(PUBLISHED / "llamafactory" / "apollo-llama3-full-sft.yaml")
    [here] = [f for f in report.findings if f.code == "TG158"]
    assert here.stage == "dataset" and "dataset_info.json" in here.message and here.key == "dataset"
    assert report.config_trainer.passed and not report.gates_passed


def test_a_pure_bf16_full_fine_tune_keeps_no_fp32_copy():
    report = check(PUBLISHED / "llamafactory" / "apollo-llama3-full-sft.yaml", train=ALPACA[0], validation=ALPACA[1])
    assert report.stage("estimate").status == "passed", [f.message for f in report.findings if f.severity == "error"]
    assert "master_weights" not in report.facts.estimate["memory"]["breakdown"]


def test_the_fused_cross_entropy_the_estimate_does_not_model_leaves_the_memory_unjudged():
    report = check(PUBLISHED / "axolotl" / "llama-3-3b-qat-nvfp4.yaml", train=ALPACA[0], validation=ALPACA[1])
    [unjudged] = [f for f in report.findings if f.code == "TG429"]
    assert "liger_fused_linear_cross_entropy: true" in unjudged.message and unjudged.severity == "warning"
    assert report.stage("estimate").status == "skipped" and "estimate" in report.not_run
    assert report.gates_passed and report.config_trainer.passed and not report.approved_for_full_run


def test_tunegate_estimate_notes_what_it_does_not_model_and_exits_0():
    run = subprocess.run([sys.executable, "-m", "tunegate", "estimate", str(PUBLISHED / "axolotl" /
                          "llama-3-3b-qat-nvfp4.yaml")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**_env(), "HF_HUB_CACHE": str(PUBLISHED / "hub"), "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0 and "does not fit" in run.stdout
    assert "note: TG429 memory not judged" in run.stderr


def test_without_a_memory_saver_the_same_run_is_refused(tmp_path):
    config = tmp_path / "no-liger.yml"
    config.write_text((PUBLISHED / "axolotl" / "llama-3-3b-qat-nvfp4.yaml").read_text(encoding="utf-8")
                      .replace("liger_fused_linear_cross_entropy: true", "liger_fused_linear_cross_entropy: false"),
                      encoding="utf-8")
    report = check(config, train=ALPACA[0], validation=ALPACA[1])
    assert "TG401" in errors(report) and not report.config_trainer.passed


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_cut_cross_entropy_is_said_once_whether_its_plugin_or_its_key_turns_it_on(tmp_path):
    from tunegate.spec.check import parse_spec

    source = (PUBLISHED / "axolotl" / "alst-llama3-8b-deepspeed.yaml").read_text(encoding="utf-8")
    listed = parse_spec(PUBLISHED / "axolotl" / "alst-llama3-8b-deepspeed.yaml").result.stats["memory_savers"]
    assert [s for s in listed if "Cut Cross-Entropy" in s] == [
        "plugins: CutCrossEntropyPlugin (Cut Cross-Entropy: the logits are never held whole)"]
    for value, said in (("true", ["cut_cross_entropy: true"]), ("false", [])):
        config = tmp_path / f"cce-{value}.yaml"
        config.write_text(source + f"cut_cross_entropy: {value}\n", encoding="utf-8")
        savers = parse_spec(config).result.stats["memory_savers"]
        assert [s.split(" (")[0] for s in savers if "Cut Cross-Entropy" in s] == said
