"""Outcome: what a black box answers, how NOMAD reads it, and how a gate report becomes one."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from tunegate.report import Finding, GateReport, StageResult
from tunegate.sweep.nomad_outcome import Outcome, coerce, from_report, nomad_outputs


def test_a_feasible_outcome_needs_a_finite_objective():
    for bad in (None, math.nan, math.inf):
        with pytest.raises(ValidationError, match="finite objective"):
            Outcome(feasible=True, objective=bad)


def test_a_feasible_outcome_cannot_exceed_gpu_memory():
    with pytest.raises(ValidationError, match="cannot exceed GPU memory"):
        Outcome(feasible=True, objective=1.0, memory_excess_gib=2.5)


def test_a_rejected_outcome_needs_a_reason():
    with pytest.raises(ValidationError, match="needs a reason"):
        Outcome(feasible=False)


def test_a_rejected_outcome_may_keep_the_non_finite_loss_it_saw():
    assert math.isnan(Outcome.rejected("loss is nan", ["TG516"], objective=math.nan).objective)


def test_nomad_reads_the_loss_and_both_constraints_in_order():
    assert nomad_outputs(Outcome(feasible=True, objective=1.25, memory_excess_gib=-3.0)) == "1.25 -3 0"
    assert nomad_outputs(Outcome(feasible=True, objective=1.25)) == "1.25 0 0"
    assert nomad_outputs(Outcome.rejected("does not fit", ["TG401"], memory_excess_gib=7.5)) == "inf 7.5 1"
    assert nomad_outputs(Outcome.rejected("loss is nan", ["TG516"])) == "inf 0 1"


def test_an_exception_handed_back_is_a_rejected_outcome_naming_it():
    outcome = coerce(TimeoutError("mini-run took over 600 s"))
    assert not outcome.feasible and outcome.codes == ["exception"]
    assert outcome.reason == "the black box raised TimeoutError: mini-run took over 600 s"


def test_anything_else_handed_back_is_a_rejected_outcome_too():
    assert coerce(42).reason.startswith("the black box raised ValidationError")
    assert coerce({"feasible": True, "objective": 0.5}).objective == 0.5


def _report(status: str, findings: list[Finding], facts: dict) -> GateReport:
    stage = StageResult(name="mini-run", status=status, findings=findings,
                        totals_by_code={f.code: 1 for f in findings})
    return GateReport.from_stages([StageResult(name="spec", status="passed"), stage], facts=facts)


MEMORY = {"estimate": {"memory": {"peak_gib": 30.0, "capacity_gib": 79.6}}}


def test_an_approved_report_with_a_loss_is_feasible_with_its_memory_headroom():
    outcome = from_report(_report("passed", [], MEMORY), 1.5)
    assert outcome.feasible and outcome.objective == 1.5 and outcome.memory_excess_gib == pytest.approx(-49.6)


def test_an_approved_report_with_a_non_finite_loss_is_rejected():
    outcome = from_report(_report("passed", [], MEMORY), math.inf)
    assert not outcome.feasible and outcome.reason == "the validation loss is inf"


def test_a_rejecting_report_names_its_error_findings():
    nan = Finding(code="TG516", severity="error", stage="mini-run", message="the training loss is nan at step 2")
    note = Finding(code="TG515", severity="info", stage="mini-run", message="mini-run on the CPU")
    outcome = from_report(_report("failed", [nan, note], {}), None)
    assert not outcome.feasible and outcome.codes == ["TG516"]
    assert outcome.reason == "TG516 the training loss is nan at step 2"
    assert outcome.memory_excess_gib is None
