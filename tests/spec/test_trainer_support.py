"""The spec stage rejects what tunegate's trainer refuses, so no gate approves what launch refuses."""
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


def test_fsdp_is_rejected_at_its_key_because_the_trainer_has_no_sharding():
    found = _errors("sharding_fsdp.yaml")["TG160"]
    assert (found.key, found.line) == ("training.sharding", 3)
    assert "tunegate launch would refuse it" in found.message and "sharding: none" in found.hint


@pytest.mark.skipif(not NO_BNB, reason="bitsandbytes is installed here: the trainer can load a 4-bit base")
def test_a_4bit_base_and_a_paged_optimizer_without_bitsandbytes_are_rejected_together():
    found = _errors("qlora.yaml")["TG161"]
    assert found.key == "model.quantization"
    assert "model.quantization 4bit and training.optimizer paged_adamw_8bit" in found.message
    assert "tunegate[qlora]" in found.hint


def test_a_spec_the_trainer_runs_has_neither_error():
    assert not {"TG160", "TG161"} & set(_errors("good.yaml"))
