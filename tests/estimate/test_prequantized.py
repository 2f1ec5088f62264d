"""A checkpoint stored quantised is estimated as transformers loads it, and the gate says so."""
from __future__ import annotations

import importlib.util
import shutil

import pytest

from tests.support.estimate_specs import context, make_spec
from tests.support.paths import DATA
from tunegate.estimate.stage import run_stage

PREQUANTIZED = DATA / "estimate" / "prequantized"


def stage_for(folder: str, quantization: str = "none", **sections):
    model = {"id": str(PREQUANTIZED / folder), "quantization": quantization}
    return run_stage(context(make_spec(model=model, **sections)))


def test_a_bnb_4bit_checkpoint_is_estimated_as_qlora_and_fits_a_t4():
    # a 16-bit reading holds 15 GiB of weights and does not fit a T4; the NF4 checkpoint is 5.3 GiB,
    # 7.3 with the embeddings and head in fp32 (prepare_model_for_kbit_training)
    stage = stage_for("llama-3-8b-bnb-4bit", training={"precision": "fp16", "micro_batch_size": 1,
                                                       "gradient_checkpointing": True, "max_seq_len": 1024},
                      hardware={"gpu": "T4"})
    assert stage.stats["model"]["method"] == "qlora"
    assert stage.stats["memory"]["breakdown"]["weights"] < 7.5
    assert stage.stats["memory"]["verdict"] == "fits"


def test_the_gate_says_the_checkpoint_overrides_model_quantization():
    stage = stage_for("llama-3-8b-bnb-4bit")
    finding = next(f for f in stage.findings if f.code == "TG413")
    assert finding.severity == "warning" and "bitsandbytes" in finding.message
    assert finding.key == "model.quantization" and "model.quantization: 4bit" in finding.hint


def test_saying_model_quantization_4bit_for_it_is_no_finding():
    stage = stage_for("llama-3-8b-bnb-4bit", quantization="4bit")
    assert "TG413" not in {f.code for f in stage.findings}
    assert stage.stats["model"]["method"] == "qlora"


def test_a_gptq_checkpoint_holds_4_bit_weights_too():
    stage = stage_for("llama-2-7b-gptq")
    assert stage.stats["model"]["method"] == "qlora"
    assert stage.stats["memory"]["breakdown"]["weights"] < 4.5  # 6.74 B: 12.6 GiB in 16 bit


def test_a_full_fine_tune_of_a_quantised_checkpoint_cannot_be_trained():
    stage = stage_for("llama-3-8b-bnb-4bit", training={"method": "full"})
    assert any(f.code == "TG410" and "quantized base" in f.message for f in stage.findings)


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None,
                    reason="bitsandbytes is installed here: it loads the stored 4-bit checkpoint")
def test_a_hub_checkpoint_stored_in_4bit_without_bitsandbytes_here_is_named_once_its_config_is_read(tmp_path, monkeypatch):
    # The spec stage never asks the hub, so a hub id's stored quantisation is first known here, from
    # the local HF cache (as `hf download unsloth/llama-3-8b-bnb-4bit config.json` leaves it).
    import huggingface_hub.constants

    repo = tmp_path / "hub" / "models--unsloth--llama-3-8b-bnb-4bit"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("4f2c1e")
    (repo / "snapshots" / "4f2c1e").mkdir(parents=True)
    shutil.copy(PREQUANTIZED / "llama-3-8b-bnb-4bit" / "config.json", repo / "snapshots" / "4f2c1e" / "config.json")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    stage = run_stage(context(make_spec(model={"id": "unsloth/llama-3-8b-bnb-4bit", "quantization": "4bit"})))
    found = next(f for f in stage.findings if f.code == "TG161")
    # a requirement of the machine that runs the training, not of the one that checks: never a failure here
    assert found.severity == "info" and found.key == "model.id" and stage.status == "passed"
    assert "hub:unsloth/llama-3-8b-bnb-4bit" in found.message and "bitsandbytes" in found.message
    assert "requirement of the run machine" in found.message
