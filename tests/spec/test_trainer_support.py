"""The spec stage rejects what tunegate's trainer never runs (sharding), and names what the run machine
needs (bitsandbytes, a stored checkpoint's loader) without failing for it on the machine it runs on."""
from __future__ import annotations

import importlib.util

import pytest

from tests.support.paths import DATA
from tunegate.spec.check import read_spec

SPECS = DATA / "spec"
NO_BNB = importlib.util.find_spec("bitsandbytes") is None


def _errors(name: str) -> dict[str, object]:
    result, _ = read_spec(SPECS / name)
    assert result.status == "failed" or not any(f.severity == "error" for f in result.findings)
    return {f.code: f for f in result.findings if f.severity == "error"}


def _named(name: str) -> dict[str, object]:
    """The spec stage's info findings: what the run machine needs and this one lacks."""
    result, spec = read_spec(SPECS / name)
    assert result.status == "passed" and spec is not None  # never a failure of the check
    return {f.code: f for f in result.findings if f.severity == "info"}


def test_fsdp_is_rejected_at_its_key_because_the_trainer_has_no_sharding():
    found = _errors("sharding_fsdp.yaml")["TG160"]
    assert (found.key, found.line) == ("training.sharding", 3)
    assert "tunegate launch would refuse it" in found.message and "sharding: none" in found.hint


@pytest.mark.skipif(not NO_BNB, reason="bitsandbytes is installed here: nothing to name")
def test_a_4bit_base_and_a_paged_optimizer_without_bitsandbytes_here_are_named_together_as_a_run_machine_need():
    found = _named("qlora.yaml")["TG161"]
    assert found.key == "model.quantization"
    assert "model.quantization 4bit and training.optimizer paged_adamw_8bit" in found.message
    assert "requirement of the run machine" in found.message and "tunegate[qlora]" in found.hint


def test_the_run_machine_needs_of_a_qlora_spec_are_listed_with_where_they_must_hold():
    result, _ = read_spec(SPECS / "qlora.yaml")
    needs = {r["need"]: r for r in result.stats["requirements"]}
    assert needs["bitsandbytes"]["where"] == "run machine" and needs["bitsandbytes"]["met_here"] is not NO_BNB
    assert needs["a CUDA GPU"]["kind"] == "hardware" and needs["a CUDA GPU"]["met_here"] is None


def test_a_spec_the_trainer_runs_has_neither_error():
    assert not {"TG160", "TG161"} & set(_errors("good.yaml"))


CHECKPOINTS = SPECS / "checkpoints"
PREQUANTIZED = DATA / "estimate" / "prequantized"
NO_GPTQ = not any(importlib.util.find_spec(m) for m in ("gptqmodel", "auto_gptq"))
NO_AWQ = not any(importlib.util.find_spec(m) for m in ("gptqmodel", "awq"))


def _errors_for_model(folder, tmp_path) -> dict[str, object]:
    """The spec stage's info findings for a LoRA spec on the local checkpoint `folder` (quantization:
    none): what loading it needs that this machine lacks; never an error of the spec stage."""
    (tmp_path / "spec.yaml").write_text(
        f"model: {{id: '{folder}'}}\ndata: {{train: t.jsonl, validation: v.jsonl}}\n"
        "training: {learning_rate: 2.0e-4, epochs: 1}\nhardware: {gpu: A100-80GB, count: 1}\n")
    result, _ = read_spec(tmp_path / "spec.yaml")
    assert result.status == "passed"
    return {f.code: f for f in result.findings if f.severity == "info"}


@pytest.mark.skipif(not NO_BNB, reason="bitsandbytes is installed here: it loads the stored 4-bit checkpoint")
def test_a_local_checkpoint_stored_in_4bit_with_bitsandbytes_needs_it_whatever_model_quantization_says():
    found = _named("prequantized_bnb_4bit.yaml")["TG161"]  # model.id resolves beside the spec, as the estimate reads it
    config = PREQUANTIZED / "llama-3-8b-bnb-4bit" / "config.json"
    assert (found.key, found.line) == ("model.id", 3)
    assert str(config) in found.message and "stored in 4 bit with bitsandbytes" in found.message
    assert "model.quantization (none)" in found.message
    assert "tunegate[qlora]" in found.hint and "unquantised" in found.hint


@pytest.mark.skipif(not NO_BNB, reason="bitsandbytes is installed here: it loads the stored 8-bit checkpoint")
def test_a_local_checkpoint_stored_in_8bit_with_bitsandbytes_needs_it_too(tmp_path):
    found = _errors_for_model(CHECKPOINTS / "mistral-7b-bnb-8bit", tmp_path)["TG161"]
    assert found.key == "model.id" and "stored in 8 bit with bitsandbytes" in found.message


@pytest.mark.skipif(not NO_GPTQ, reason="a GPTQ loader is installed here")
def test_a_gptq_checkpoint_without_its_loader_names_the_packages_to_install(tmp_path):
    found = _errors_for_model(PREQUANTIZED / "llama-2-7b-gptq", tmp_path)["TG162"]
    assert found.key == "model.id" and "stored in 4 bit with GPTQ" in found.message
    assert "gptqmodel" in found.message and "pip install" in found.hint and "unquantised" in found.hint


@pytest.mark.skipif(not NO_AWQ, reason="an AWQ loader is installed here")
def test_an_awq_checkpoint_without_its_loader_names_the_packages_to_install(tmp_path):
    found = _errors_for_model(CHECKPOINTS / "mistral-7b-awq", tmp_path)["TG162"]
    assert found.key == "model.id" and "stored in 4 bit with AWQ" in found.message and "gptqmodel" in found.hint


def test_a_local_16bit_checkpoint_needs_no_quantisation_package(tmp_path):
    assert not {"TG161", "TG162"} & set(_errors_for_model(CHECKPOINTS / "mistral-7b", tmp_path))
