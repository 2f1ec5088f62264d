"""The rule engine's advice, each suggestion verified by the estimate."""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import DATA, make_spec
from tunegate.advisor.rules import advise_with_rules


def by_setting(advice):
    return {s.setting: s for s in advice.suggestions}


def test_bf16_replaces_fp16_where_the_gpu_has_it():
    advice, final = advise_with_rules(make_spec(training={"precision": "fp16"}))
    s = by_setting(advice)["training.precision"]
    assert (s.current, s.proposed, s.verified) == ("fp16", "bf16", True)
    assert final.training.precision == "bf16"


def test_no_bf16_advice_on_a_gpu_without_bf16():
    advice, _ = advise_with_rules(make_spec(training={"precision": "fp16"}, hardware={"gpu": "V100-32GB"}))
    assert "training.precision" not in by_setting(advice)


def test_eager_attention_on_long_sequences_becomes_flash_attention():
    advice, _ = advise_with_rules(make_spec(training={"attention": "eager", "micro_batch_size": 1,
                                                     "grad_accum_steps": 8}))
    s = by_setting(advice)["training.attention"]
    assert (s.proposed, s.verified) == ("flash_attention_2", True)
    assert s.predicted_peak_gib < advice.peak_gib_before


def test_a_larger_micro_batch_our_estimate_credits_no_speed_up_for_is_not_advised():
    # Same global batch, same tokens per step: our throughput model gives the same hours, so the
    # change is not advice (issue 11: a change that is no faster was shown as verified).
    advice, final = advise_with_rules(make_spec(training={"micro_batch_size": 1, "grad_accum_steps": 8}))
    assert "training.micro_batch_size" not in by_setting(advice)
    assert (final.training.micro_batch_size, final.training.grad_accum_steps) == (1, 8)
    assert all(s.verified for s in advice.suggestions)


def test_micro_batching_is_said_to_be_needed_when_a_cheaper_fit_exists():
    advice, final = advise_with_rules(make_spec(training={"micro_batch_size": 8, "grad_accum_steps": 2,
                                                         "max_seq_len": 8192}))
    s = by_setting(advice)["training.micro_batch_size"]
    assert s.verified and s.proposed < 8 and "Micro-batching is needed" in s.rationale
    assert s.proposed * s.companions["training.grad_accum_steps"] == 16
    assert not final.training.gradient_checkpointing  # no recomputation when smaller batches fit


def test_gradient_checkpointing_is_said_to_be_needed_when_micro_batch_1_does_not_fit():
    advice, final = advise_with_rules(make_spec(
        model={"id": "meta-llama/Llama-3.1-8B"}, training={"micro_batch_size": 1, "max_seq_len": 8192},
        hardware={"gpu": "L40S"}))
    s = by_setting(advice)["training.gradient_checkpointing"]
    assert s.verified and "Gradient checkpointing is needed" in s.rationale
    assert s.expected_time_saving < 0  # it costs time, and the advice says so
    assert final.training.gradient_checkpointing


def test_torch_compile_is_suggested_in_default_mode_with_its_saving_less_the_warm_up():
    advice, _ = advise_with_rules(make_spec())
    s = by_setting(advice)["training.compile"]
    before = advice.hours_before
    # 25 % more tokens/s is 20 % less time, less the 2 minutes default mode spends compiling
    assert s.companions == {"training.compile_mode": "default"}
    assert s.verified and s.expected_time_saving == pytest.approx(1 - (0.8 * before + 2 / 60) / before, abs=0.002)
    assert "recompilation" in s.risks and "max-autotune" in s.rationale


def test_no_new_hardware_for_a_job_that_fits():
    advice, _ = advise_with_rules(make_spec())
    assert not {"hardware.gpu", "hardware.count"} & set(by_setting(advice))


def test_a_job_impossible_at_micro_batch_1_gets_a_4bit_base_never_sharding_the_trainer_does_not_run():
    advice, final = advise_with_rules(make_spec(model={"id": str(DATA / "llama-70b")},
                                                hardware={"gpu": "A100-80GB", "count": 1}))
    s = by_setting(advice)["model.quantization"]
    assert s.verified and s.proposed == "4bit" and s.companions == {"training.gradient_checkpointing": True}
    assert final.model.quantization == "4bit" and final.training.sharding == "none"
    assert not {"hardware.count", "training.sharding"} & set(by_setting(advice))


def test_hours_before_and_after_come_from_the_estimate():
    advice, _ = advise_with_rules(make_spec())
    assert advice.hours_after < advice.hours_before
    assert advice.hours_after == min(s.predicted_hours for s in advice.suggestions if s.verified)


def test_a_custom_gpu_gets_verified_advice_from_its_own_figures():
    custom = {"memory_gib": 80.0, "bf16_tflops": 900.0, "fp32_tflops": 60.0, "bandwidth_gbs": 3000.0}
    advice, final = advise_with_rules(make_spec(training={"precision": "fp16"},
                                                hardware={"gpu": "Lab-accelerator", "custom": custom}))
    s = by_setting(advice)["training.precision"]
    assert (s.proposed, s.verified) == ("bf16", True)
    assert final.training.precision == "bf16"


def test_a_run_of_seconds_is_not_worth_compiling_and_its_hours_are_not_rounded_to_0():
    # issue 11: the quickstart's 0.0004 h was rounded to 0.0 before the saving was computed; now its
    # seconds are shown as they are, and torch.compile's minutes of warm-up would cost far more than it saves
    from tests.support.paths import EXAMPLES
    from tunegate.cli.advise import render_advice
    from tunegate.spec.check import read_spec

    _, spec = read_spec(EXAMPLES / "quickstart.yaml")
    advice, _ = advise_with_rules(spec, base_dir=EXAMPLES)
    assert 0 < advice.hours_after <= advice.hours_before < 0.01
    assert "training.compile" not in by_setting(advice)
    text = render_advice(advice.model_dump(mode="json"))
    assert "100%" not in text and "-0%" not in text and "0.0 h" not in text


def test_no_saving_is_ever_negative_zero():
    # the worked case's micro-batching keeps the hours: shown as needed for memory, not "-0 %"
    from tests.support.paths import EXAMPLES
    from tunegate.cli.advise import render_advice
    from tunegate.spec.check import read_spec

    _, spec = read_spec(EXAMPLES / "worked_case.yaml")
    advice, _ = advise_with_rules(spec, base_dir=EXAMPLES)
    batch = by_setting(advice)["training.micro_batch_size"]
    assert batch.purpose == "memory" and str(batch.expected_time_saving) == "0.0"
    assert "-0%" not in render_advice(advice.model_dump(mode="json"))
