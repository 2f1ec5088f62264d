"""What one black-box evaluation of a NOMAD sweep returns, and how NOMAD reads it.

The black box is `evaluate(overrides) -> Outcome`: a candidate spec through the gate (spec,
estimate, mini-run), then a short training budget scored on the frozen validation set. NOMAD sees
three outputs per point (`BB_OUTPUT_TYPE OBJ EB EB`):

    OBJ  the validation loss                                      (inf when rejected)
    EB   predicted peak memory - the GPU's memory, in GiB         (<= 0: fits)
    EB   1 when the gate rejected the candidate, else 0           (<= 0: approved)

A rejected candidate is written as an extreme-barrier violation, never as a failed evaluation
(`return 0`): NOMAD 4.6 stops the whole search when its start point fails, but runs its phase-one
search (towards feasibility) when the start point violates an EB constraint.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

if TYPE_CHECKING:
    from tunegate.report import GateReport

OUTPUT_TYPES = "OBJ EB EB"


class Outcome(BaseModel):
    """The verdict on one candidate: feasible with a loss, or rejected with the reason."""

    model_config = ConfigDict(extra="forbid")

    feasible: bool = Field(description="The gate approved the candidate and its loss is finite.")
    objective: float | None = Field(None, description="Validation loss (lower is better); required when feasible.")
    memory_excess_gib: float | None = Field(
        None, description="Predicted peak GPU memory minus the GPU's memory, GiB; > 0 means it does not fit.")
    reason: str = Field("", description="Why the candidate was rejected; required when not feasible.")
    codes: list[str] = Field(default_factory=list, description="Finding codes behind the rejection, e.g. TG501.")
    details: dict[str, Any] = Field(
        default_factory=dict, description="Anything the caller wants back with the evaluation (run id, train loss).")

    @model_validator(mode="after")
    def _consistent(self) -> Outcome:
        if self.feasible:
            if self.objective is None or not math.isfinite(self.objective):
                raise ValueError(f"a feasible outcome needs a finite objective, got {self.objective!r}")
            if self.memory_excess_gib is not None and self.memory_excess_gib > 0:
                raise ValueError(f"a feasible outcome cannot exceed GPU memory "
                                 f"(memory_excess_gib {self.memory_excess_gib})")
        elif not self.reason:
            raise ValueError("a rejected outcome needs a reason")
        if self.memory_excess_gib is not None and not math.isfinite(self.memory_excess_gib):
            raise ValueError(f"memory_excess_gib must be finite, got {self.memory_excess_gib!r}")
        return self

    @classmethod
    def rejected(cls, reason: str, codes: list[str] | None = None, **fields: Any) -> Outcome:
        """A rejected candidate, e.g. `Outcome.rejected("loss is nan", ["TG503"])`."""
        return cls(feasible=False, reason=reason, codes=list(codes or []), **fields)


def from_exception(exc: BaseException) -> Outcome:
    """The outcome of a black box that raised: a failed evaluation that says what was raised."""
    if isinstance(exc, ValidationError):  # its str() spans lines and ends with a URL
        text = "; ".join(".".join(map(str, e["loc"])) + (": " if e["loc"] else "") + e["msg"]
                         for e in exc.errors())
    else:
        text = " ".join(str(exc).split())
    detail = f": {text[:500]}" if text else ""
    return Outcome.rejected(f"the black box raised {type(exc).__name__}{detail}", ["exception"])


def coerce(item: Any) -> Outcome:
    """Whatever a black box returned, as an Outcome (an exception or a wrong type is a failure)."""
    if isinstance(item, Outcome):
        return item
    if isinstance(item, BaseException):
        return from_exception(item)
    try:
        return Outcome.model_validate(item)
    except Exception as exc:  # a malformed answer is the black box's failure, not the sweep's
        return from_exception(exc)


def nomad_outputs(outcome: Outcome) -> str:
    """The outputs NOMAD reads for this outcome, in OUTPUT_TYPES order."""
    memory = 0.0 if outcome.memory_excess_gib is None else outcome.memory_excess_gib
    if outcome.feasible:
        return f"{outcome.objective:.17g} {memory:.17g} 0"
    return f"inf {memory:.17g} 1"


def from_report(report: GateReport, objective: float | None = None) -> Outcome:
    """The outcome of a candidate from its gate report and, when approved, its validation loss.

    The memory constraint comes from the estimate stage's facts (`facts.estimate.memory`); the
    reason names the first error findings, and `codes` holds every error code.
    """
    excess = memory_excess(report)
    errors = [f for f in report.findings if f.severity == "error"]
    if errors or not report.gates_passed:  # the stages the black box chose to run (check(only=...))
        reason = "; ".join(f"{f.code} {f.message}" for f in errors[:3]) or "the gate did not approve it"
        return Outcome.rejected(reason, sorted({f.code for f in errors}), memory_excess_gib=excess)
    if excess is not None and excess > 0:
        return Outcome.rejected(f"predicted peak memory is {excess:.2f} GiB over the GPU's",
                                memory_excess_gib=excess)
    if objective is None or not math.isfinite(objective):
        return Outcome.rejected(f"the validation loss is {objective!r}", objective=objective,
                                memory_excess_gib=excess)
    return Outcome(feasible=True, objective=objective, memory_excess_gib=excess)


def memory_excess(report: GateReport) -> float | None:
    """Predicted peak GPU memory minus capacity, GiB, from the estimate stage; None if not estimated."""
    memory = (report.facts.estimate or {}).get("memory") or {}
    peak, capacity = memory.get("peak_gib"), memory.get("capacity_gib")
    if not isinstance(peak, (int, float)) or not isinstance(capacity, (int, float)):
        return None
    return round(float(peak) - float(capacity), 4)
