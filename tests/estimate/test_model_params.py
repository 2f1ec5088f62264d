"""A model known only by its size: model.params lets the estimate run with no config.json, says so
(TG419) and widens the memory band; a readable config.json always wins."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.support.estimate_specs import context, make_spec
from tunegate.estimate import calibration
from tunegate.estimate.families import load_architecture
from tunegate.estimate.run import estimate_run
from tunegate.estimate.sized import architecture_from_size
from tunegate.estimate.stage import run_stage

GATED = "example-org/gated-model-8b"  # no config.json here, and the hub is switched off


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_the_size_alone_gives_llama_3_1_8bs_shape():
    real = load_architecture("meta-llama/Llama-3.1-8B")
    sized = architecture_from_size(real.param_count() / 1e9)
    shape = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size", "vocab_size")
    assert [getattr(sized, k) for k in shape] == [getattr(real, k) for k in shape]
    assert sized.param_count() == pytest.approx(real.param_count(), rel=1e-3)


def test_a_given_hidden_size_and_depth_are_kept_and_the_mlp_makes_up_the_size():
    real = load_architecture("meta-llama/Llama-3.1-70B")
    sized = architecture_from_size(real.param_count() / 1e9, hidden_size=8192, num_layers=80)
    assert (sized.hidden_size, sized.num_layers) == (8192, 80)
    assert sized.param_count() == pytest.approx(real.param_count(), rel=1e-3)
    assert architecture_from_size(70.6, hidden_size=8192).num_layers == 80


def test_a_gated_model_is_estimated_from_its_size_with_a_wider_band_and_a_warning():
    spec = make_spec(model={"id": GATED, "params": 8.03})
    ctx = context(spec)
    result = run_stage(ctx)
    (f,) = [f for f in result.findings if f.code == "TG419"]
    assert result.status == "passed" and f.severity == "warning" and f.key == "model.params"
    assert "8.03 B" in f.message and "25% wider" in f.message
    est = estimate_run(spec)
    assert est.count == "model.params" and ctx.facts.estimate["model"]["count"] == "model.params"
    high = calibration.BAND_HIGH + calibration.UNKNOWN_ARCHITECTURE_WIDENING
    assert est.memory.high_gib == pytest.approx(est.memory.peak_gib * high, rel=1e-3)
    known = estimate_run(make_spec(model={"id": "meta-llama/Llama-3.1-8B"}))
    assert est.memory.peak_gib == pytest.approx(known.memory.peak_gib, rel=0.02)  # same shape, same figures
    assert est.hours == pytest.approx(known.hours, rel=0.02)


def test_without_model_params_an_unreadable_config_still_stops_the_estimate_and_names_the_way_out():
    result = run_stage(context(make_spec(model={"id": GATED})))
    (f,) = [f for f in result.findings if f.code == "TG404"]
    assert result.status == "skipped" and "model.params" in f.hint


def test_a_readable_config_wins_over_model_params():
    est = estimate_run(make_spec(model={"id": "meta-llama/Llama-3.2-1B", "params": 70.0}))
    assert est.count == "config" and est.memory.total_params < 2e9


def test_a_size_no_model_has_is_a_finding_not_a_crash():
    result = run_stage(context(make_spec(model={"id": GATED, "params": 0.01, "hidden_size": 4096})))
    (f,) = [f for f in result.findings if f.code == "TG405"]
    assert f.key == "model.params" and "embeddings" in f.message


@pytest.mark.parametrize(("model", "key"), [({"params": 1e300}, "params"),
                                            ({"params": 5.0, "num_layers": 10**9}, "num_layers")])
def test_a_size_beyond_any_model_is_refused_at_its_key_and_never_shaped(model, key):
    with pytest.raises(ValidationError, match=f"model.{key}\n.*less than or equal"):
        make_spec(model={"id": GATED, **model})  # the spec's bound (TG103 at the key, tunegate.spec.bounds)
    with pytest.raises(ValueError, match="beyond any model"):  # and the estimate's own guard behind it
        architecture_from_size(model["params"], num_layers=model.get("num_layers"))


def test_a_shape_without_a_size_is_a_spec_error():
    with pytest.raises(ValidationError, match="only used with model.params"):
        make_spec(model={"id": GATED, "num_layers": 32})
