"""A crash of ours during a candidate is an error of tunegate, never a verdict on the candidate.

Training that timed out, died or crashed, and any exception while evaluating, give an `errored`
outcome with the reason; an unhealthy training (a NaN loss) still rejects the candidate.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.flows import FLOWS_DATA
from tunegate.fullrun.launcher import torch_threads, train_apart
from tunegate.fullrun.result import NONFINITE_LOSS, TrainResult
from tunegate.report import GateReport
from tunegate.spec.check import load_spec, parse_spec
from tunegate.sweep.evaluate import CandidateOutcome, evaluate_candidate, fold_training
from tunegate.tracking.session import TrackingSession


def _outcome() -> CandidateOutcome:
    return CandidateOutcome(overrides={"lora.r": 4}, spec_path="c.yaml", approved=True)


def test_a_training_that_outlives_its_timeout_makes_the_candidate_errored_not_rejected(tmp_path: Path):
    spec_path = FLOWS_DATA / "parallel.yaml"
    result = train_apart(load_spec(spec_path), spec_path, tmp_path / "train", 2, threads=1, timeout_s=0.5,
                         log=lambda _line: None)
    outcome = _outcome()
    measured = fold_training(result, outcome)
    assert result.codes == ["TG711"]
    assert outcome.errored and not outcome.approved
    assert outcome.reason.startswith("tunegate could not train it: the run was stopped after its timeout")
    assert measured["verdict"] == "error"


def test_an_unhealthy_training_still_rejects_the_candidate():
    result = TrainResult(status="unhealthy", reason="loss is nan at step 2", codes=[NONFINITE_LOSS])
    outcome = _outcome()
    measured = fold_training(result, outcome)
    assert not outcome.approved and not outcome.errored
    assert measured["verdict"] == "rejected" and outcome.codes == [NONFINITE_LOSS]


def test_an_exception_of_ours_while_evaluating_is_an_errored_outcome_with_its_reason(store_uri, tmp_path: Path):
    shutil.copytree(FLOWS_DATA, tmp_path / "flows")
    base = parse_spec(tmp_path / "flows" / "parallel.yaml")
    # a parent run the store does not hold: looking up the candidate's earlier run raises in our code
    lost = TrackingSession(uri=store_uri, experiment="tunegate", parent_run_id="0" * 32)
    outcome = evaluate_candidate(base, {"lora.r": 4}, GateReport.from_stages([]), lost, 2)
    assert outcome.errored and not outcome.approved
    assert outcome.reason.startswith("tunegate error while evaluating the candidate (not a verdict on it): ")
    assert "MlflowException" in outcome.reason


def test_a_short_training_gets_one_thread_by_default(monkeypatch):
    monkeypatch.delenv("TUNEGATE_TORCH_THREADS", raising=False)
    assert [torch_threads(n, cores=16) for n in (1, 2, 4)] == [1, 1, 1]


def test_more_threads_asked_for_are_capped_at_each_trainings_share_of_the_cores(monkeypatch):
    monkeypatch.setenv("TUNEGATE_TORCH_THREADS", "8")
    assert [torch_threads(n, cores=16) for n in (1, 2, 4, 32)] == [8, 8, 4, 1]
