"""torch.compile's mode is priced: each mode's compilation warm-up is added to the hours, once."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.support.estimate_specs import make_spec
from tunegate.advisor.advice import Suggestion
from tunegate.advisor.verify import verify
from tunegate.estimate.run import estimate_run
from tunegate.estimate.throughput import COMPILE_WARMUP_MINUTES


def hours(**training) -> tuple[float, float]:
    est = estimate_run(make_spec(training=training))
    return est.hours, est.compile_warmup_hours


def test_each_mode_adds_its_warm_up_to_the_compiled_runs_hours():
    eager, none = hours()
    assert none == 0
    compiled, _ = hours(compile=True)
    for mode, minutes in COMPILE_WARMUP_MINUTES.items():
        total, warmup = hours(compile=True, compile_mode=mode)
        assert warmup == pytest.approx(minutes / 60)
        assert total == pytest.approx(compiled - COMPILE_WARMUP_MINUTES["default"] / 60 + minutes / 60)
    # the steady speed-up is the same in every mode: 25 % more tokens/s
    assert compiled - COMPILE_WARMUP_MINUTES["default"] / 60 == pytest.approx(eager / 1.25, rel=1e-3)


def test_the_warm_up_is_paid_once_however_many_gpus_compile():
    one = estimate_run(make_spec(training={"compile": True, "compile_mode": "max-autotune"}))
    four = estimate_run(make_spec(training={"compile": True, "compile_mode": "max-autotune"}, hardware={"count": 4}))
    assert one.compile_warmup_hours == four.compile_warmup_hours == 0.25
    assert four.summary()["compile_warmup_hours"] == 0.25


def test_a_mode_without_compile_is_a_spec_error_not_silently_ignored():
    with pytest.raises(ValidationError, match="training.compile is false"):
        make_spec(training={"compile_mode": "max-autotune"})


def test_max_autotune_is_not_advice_where_our_estimate_credits_it_no_speed():
    spec = make_spec(training={"compile": True})
    s = Suggestion(setting="training.compile_mode", current="default", proposed="max-autotune", source="llm")
    checked, _ = verify(s, spec, None, None, impossible_here=False)
    assert not checked.verified and "makes the run slower by our estimate" in checked.rejected_reason
    assert checked.predicted_hours > estimate_run(spec).hours  # 13 more minutes of compilation
