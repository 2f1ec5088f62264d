"""A model type the config-only counter does not know: transformers counts it, or the guess says so.

The gate itself stays torch-free: the meta-device count runs in a child process, once per config
(cached under $TUNEGATE_CACHE/param-counts).
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import context, make_spec
from tests.support.paths import DATA
from tunegate.estimate import calibration
from tunegate.estimate.run import estimate_run
from tunegate.estimate.stage import run_stage as estimate_stage

UNKNOWN = DATA / "estimate" / "unknown"


def test_a_type_transformers_knows_is_counted_on_its_meta_device_model(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path))
    # StarCoder2-3B: plain GELU MLP, LayerNorm with biases, a tied embedding; read as a Llama it
    # would count 4.16 B, transformers builds 3.03 B
    est = estimate_run(make_spec(model={"id": str(UNKNOWN / "starcoder2-3b")}))
    assert est.count == "meta-device"
    assert est.memory.total_params == 3_030_371_328
    result = estimate_stage(context(make_spec(model={"id": str(UNKNOWN / "starcoder2-3b")})))
    assert "TG411" not in {f.code for f in result.findings}


def test_a_type_nobody_knows_is_shown_as_a_labelled_guess_and_is_an_error(tmp_path, monkeypatch):
    # a guess is not a check: the stage fails (the run is not approved) but shows what it guessed
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path))
    spec = make_spec(model={"id": str(UNKNOWN / "acme-decoder")})
    result = estimate_stage(context(spec))
    finding = next(f for f in result.findings if f.code == "TG411")
    assert finding.severity == "error" and "Llama-style" in finding.message
    assert result.status == "failed"
    m = result.stats["memory"]
    assert result.stats["model"]["count"] == "llama-style guess"
    widened = calibration.BAND_HIGH + calibration.UNKNOWN_ARCHITECTURE_WIDENING
    assert m["high_gib"] == pytest.approx(m["peak_gib"] * widened, abs=2e-3)


def test_a_decoder_naming_its_shapes_otherwise_is_counted_not_refused_as_unusable(tmp_path, monkeypatch):
    # OPT writes its MLP width as ffn_dim: read as a Llama it once lacked intermediate_size (TG405)
    pytest.importorskip("transformers")
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path))
    spec = make_spec(model={"id": str(UNKNOWN / "opt-1.3b")}, training={"max_seq_len": 2048})
    est = estimate_run(spec)
    assert est.count == "meta-device"
    assert abs(est.memory.total_params - 1.3e9) / 1.3e9 < 0.03  # facebook/opt-1.3b: 1.3 B (transformers builds 1,315,758,080)
    assert {f.code for f in estimate_stage(context(spec)).findings}.isdisjoint({"TG405", "TG411"})
