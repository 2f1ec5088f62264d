"""LLaMA-Factory's published example configs, checked as `llamafactory-cli train` reads them.

The copies (tests/data/configs/llamafactory, sources in its README) keep the repository's layout,
so each config's `dataset_dir: data` resolves as it does in a checkout.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.fingerprint import fingerprint_file
from tunegate.gate import check
from tunegate.spec.check import parse_spec
from tunegate.spec.model import Spec

LF = DATA / "configs" / "llamafactory"
SFT = LF / "examples" / "train_lora" / "qwen3_lora_sft.yaml"
# The published supervised fine-tuning examples: LoRA, LoRA with DeepSpeed ZeRO-3, QLoRA.
PUBLISHED_SFT = [SFT, LF / "examples" / "train_lora" / "llama3_lora_sft.yaml",
                 LF / "examples" / "train_lora" / "qwen3_lora_sft_ds3.yaml",
                 LF / "examples" / "train_qlora" / "qwen3_lora_sft_otfq.yaml",
                 LF / "examples" / "train_qlora" / "llama3_lora_sft_otfq.yaml"]
# What the gate says of the machine it runs on and of tunegate's own trainer, not of the config
# as LLaMA-Factory reads it: remote code without a revision, bitsandbytes not installed here,
# sharding on one GPU (issue 32 moves these to warnings where LLaMA-Factory runs the config).
MACHINE = {"TG114", "TG115", "TG160", "TG161"}


def import_findings(config, **kwargs):
    """What the import says of the config: the spec stage's findings and the data the dataset stage
    will say it cannot have (TG141-TG143, ParsedSpec.unavailable)."""
    parsed = parse_spec(config, **kwargs)
    return [f for f in [*parsed.result.findings, *parsed.unavailable.values()] if f.code not in MACHINE]


@pytest.fixture
def concatenation(tmp_path):
    """identity + alpaca_en_demo written into one file, as LLaMA-Factory concatenates them, with the frozen
    validation split the examples leave to val_size."""
    records = [r for name in ("identity", "alpaca_en_demo") for r in
               json.loads((LF / "data" / f"{name}.json").read_text(encoding="utf-8"))]
    path = tmp_path / "identity_alpaca_en_demo.json"
    path.write_text(json.dumps(records, indent=2, ensure_ascii=False), encoding="utf-8")
    return {"train": path, "validation": LF / "data" / "alpaca_en_demo_heldout.json"}


def test_a_llamafactory_config_is_read_as_llamafactory_not_as_trl():
    parsed = parse_spec(SFT)
    assert parsed.kind == "llamafactory"
    assert not [f for f in parsed.result.findings if "use_peft" in f.message or f.code == "TG144"]


def test_the_published_sft_example_maps_llamafactory_defaults(concatenation):
    spec = Spec.model_validate(parse_spec(SFT, data=concatenation).raw)  # as mapped, before the rules
    assert (spec.model.id, spec.model.quantization, spec.data.format) == (
        "Qwen/Qwen3-4B-Instruct-2507", "none", "alpaca")
    assert (spec.lora.r, spec.lora.alpha, spec.lora.dropout, spec.lora.target_modules) == (8, 16, 0.0, "all-linear")
    t = spec.training
    assert (t.max_seq_len, t.micro_batch_size, t.grad_accum_steps, t.learning_rate, t.epochs) == (2048, 1, 8, 1e-4, 3.0)
    assert (t.lr_scheduler, t.warmup_ratio, t.precision, t.gradient_checkpointing, t.loss_on, t.seed) == (
        "cosine", 0.1, "bf16", True, "replies", 42)


@pytest.mark.parametrize("config", PUBLISHED_SFT, ids=lambda p: p.name)
def test_each_published_sft_example_gets_its_real_problems_at_its_keys(config):
    found = {(f.code, f.key) for f in import_findings(config)}
    # no frozen validation set, its own template; its two datasets are one training split
    assert found == {("TG143", None), ("TG156", "template"), ("TG140", None)}


def test_the_two_datasets_of_a_published_example_are_read_in_order_as_one_training_split(concatenation):
    parsed = parse_spec(SFT)
    assert parsed.raw["data"]["train"] == [str((LF / "data" / name).resolve())
                                           for name in ("identity.json", "alpaca_en_demo.json")]
    report = check(parsed)
    dataset = report.stage("dataset")
    assert dataset.stats["train"]["records"] == 6 + 8
    # the placeholders of the identity records, each at its own line of identity.json
    assert [(Path(f.file).name, f.line) for f in dataset.findings if f.code == "TG266"] == [
        ("identity.json", line) for line in (5, 10, 15, 20, 25, 30)]
    assert {f.code for f in dataset.findings} == {"TG143", "TG266"}
    # one stream: the digest of the two files is that of their concatenation
    assert report.fingerprints["train"]["digest"] == fingerprint_file(concatenation["train"]).digest


@pytest.mark.parametrize("config", PUBLISHED_SFT, ids=lambda p: p.name)
def test_checked_on_the_concatenation_each_published_example_passes_the_spec_stage(config, concatenation):
    found = import_findings(config, data=concatenation)
    assert not [f"{f.place()} {f.code} {f.message}" for f in found if f.severity == "error"]
    assert {f.key for f in found if f.code == "TG157"} == {"dataset", None}


def test_the_data_stage_finds_the_placeholders_of_the_shipped_identity_records(concatenation):
    result = validate_dataset(concatenation, cap=50)
    assert {f.code for f in result.findings} == {"TG266"}  # {{name}} / {{author}}, meant to be replaced
    assert len(result.findings) == 6 and all("{{name}}" in f.message for f in result.findings)


def test_qlora_deepspeed_and_the_other_objectives_are_read_as_llamafactory_reads_them(concatenation):
    assert Spec.model_validate(parse_spec(PUBLISHED_SFT[3], data=concatenation).raw).model.quantization == "4bit"
    ds3 = Spec.model_validate(parse_spec(PUBLISHED_SFT[2], data=concatenation).raw)
    assert ds3.training.sharding == "zero3"  # the ZeRO stage of examples/deepspeed/ds_z3_config.json
    for name, stage in (("qwen3_lora_dpo.yaml", "dpo"), ("qwen3_lora_kto.yaml", "kto"),
                        ("qwen3_lora_pretrain.yaml", "pt")):
        [objective] = [f for f in import_findings(LF / "examples" / "train_lora" / name) if f.code == "TG147"]
        assert (objective.key, objective.line) == ("stage", 6) and f"stage: {stage} is " in objective.message


def test_a_published_config_gives_an_estimate_offline(concatenation, monkeypatch):
    from huggingface_hub import constants

    from tunegate.estimate.run import estimate_run

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(LF / "hub"))  # the model's config.json, as hf download leaves it
    spec = Spec.model_validate(parse_spec(SFT, data=concatenation).raw)
    memory = estimate_run(spec, base_dir=SFT.parent).summary()["memory"]
    assert 8 < memory["peak_gib"] < 40  # a 4B model in bf16 with LoRA, one 2048-token sequence
