"""A mini-run of the same model on the same GPU type calibrates the estimate; any other never does.

The facts below are what a CUDA mini-run hands on (tunegate.facts.MiniRunFacts); no GPU is lent to
these tests, so they check how the estimate uses such a measurement, not the measurement itself.
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import make_spec
from tunegate.estimate.measured import memory_check
from tunegate.estimate.run import estimate_run, resolve_architecture, resolve_gpu
from tunegate.estimate.setup import setup_from_spec
from tunegate.facts import GateFacts

GIB = 2**30


def cuda_run(peak_gib: float, gpu: str = "NVIDIA A100-SXM4-80GB", **extra) -> GateFacts:
    run = {"device": "cuda", "gpu": gpu, "model": "meta-llama/Llama-3.2-1B", "tokens_per_s": 9000.0,
           "tokens_per_s_steady": 9500.0, "micro_batch_size": 2, "batch_seq_len": 1024,
           "train_peak_memory_bytes": int(peak_gib * GIB), **extra}
    return GateFacts.model_validate({"mini_run": run})


def predicted_at_the_mini_runs_shape() -> float:
    spec = make_spec()
    check = memory_check(spec, resolve_architecture(spec), resolve_gpu(spec), setup_from_spec(spec),
                         cuda_run(1.0))
    return check.predicted_gib


def test_the_mini_runs_peak_on_the_same_gpu_scales_the_full_runs_estimate():
    predicted = predicted_at_the_mini_runs_shape()
    plain = estimate_run(make_spec())
    est = estimate_run(make_spec(), cuda_run(predicted * 1.2))
    check = est.memory_check
    assert check.applied and check.ratio == pytest.approx(1.2, abs=1e-3)
    assert (check.micro_batch_size, check.seq_len) == (2, 1024)
    assert est.memory.peak_gib == pytest.approx(plain.memory.peak_gib * 1.2, rel=1e-3)
    assert est.memory.high_gib == pytest.approx(plain.memory.high_gib * 1.2, rel=1e-3)
    assert est.throughput.source == "mini-run" and est.throughput.tokens_per_s == 9500.0  # steady rate
    assert est.summary()["memory"]["check"]["measured_gib"] == pytest.approx(predicted * 1.2, abs=1e-3)


def test_a_measurement_far_from_the_model_is_reported_not_applied():
    predicted = predicted_at_the_mini_runs_shape()
    plain = estimate_run(make_spec())
    est = estimate_run(make_spec(), cuda_run(predicted * 5))
    assert not est.memory_check.applied
    assert est.memory.peak_gib == plain.memory.peak_gib


def test_another_gpu_type_or_model_leaves_the_estimate_alone():
    other_gpu = estimate_run(make_spec(), cuda_run(3.0, gpu="NVIDIA L4"))
    other_model = estimate_run(make_spec(), cuda_run(3.0, model="meta-llama/Llama-3.2-3B"))
    for est in (other_gpu, other_model):
        assert est.memory_check is None and est.throughput.source == "model"


def test_a_cpu_mini_run_is_labelled_and_never_calibrates():
    facts = GateFacts.model_validate({"mini_run": {"device": "cpu", "tokens_per_s": 50.0,
                                                   "train_peak_memory_bytes": 2 * GIB, "batch_seq_len": 128}})
    est = estimate_run(make_spec(), facts)
    assert est.memory_check is None and est.throughput.source == "model"
    assert est.summary()["measured"] == {"device": "cpu", "tokens_per_s": 50.0, "batch_seq_len": 128,
                                         "train_peak_memory_gib": 2.0}


def test_a_compiled_spec_is_checked_against_the_mini_runs_eager_setup():
    # the mini-run never compiles: a compiled prediction beside its eager peak read 1.57 (issue 31)
    eager, compiled = make_spec(), make_spec(training={"compile": True})
    checks = [memory_check(s, resolve_architecture(s), resolve_gpu(s), setup_from_spec(s), cuda_run(1.0))
              for s in (eager, compiled)]
    assert checks[0].predicted_gib == checks[1].predicted_gib


def test_the_mini_runs_eager_speed_is_sped_up_for_a_compiled_full_run():
    from tunegate.estimate.throughput import ASSUMPTIONS

    est = estimate_run(make_spec(training={"compile": True}), cuda_run(1.0))
    assert est.throughput.tokens_per_s == pytest.approx(9500.0 * ASSUMPTIONS["compile"])
