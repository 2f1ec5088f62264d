"""A sweep's progress for the person watching: candidates done of the planned total, the last verdict.

    with CandidateTally(total=3) as tally:
        outcome = tally.record(evaluate(...))   # "sweep  1/3 candidates  last: approved {"lora.r": 8} ..."
"""
from __future__ import annotations

import json

from tunegate import progress
from tunegate.sweep.evaluate import CandidateOutcome


class CandidateTally:
    """Counts evaluated candidates on the progress board (a no-op when progress is off)."""

    def __init__(self, total: int | None = None):
        self.step = progress.step("sweep", total=total, unit="candidates")
        self.done = 0

    def __enter__(self) -> CandidateTally:
        self.step.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.step.__exit__(*exc)

    def plan(self, total: int) -> None:
        self.step.update(total=total)

    def record(self, outcome: CandidateOutcome) -> CandidateOutcome:
        self.done += 1
        self.step.advance(1, note=f"last: {last_verdict(outcome)}")
        return outcome


def last_verdict(o: CandidateOutcome) -> str:
    """`approved {"lora.r": 8} val 1.2345`, or `rejected {...} (TG512)`: one short line."""
    what = json.dumps(o.overrides, separators=(",", ":"))
    if o.pruned_at_step is not None:
        return f"pruned {what} at step {o.pruned_at_step}"
    if o.approved:
        val = f" val {o.val_loss:.4f}" if o.val_loss is not None else ""
        return f"approved {what}{val}"
    return f"rejected {what}" + (f" ({', '.join(o.codes)})" if o.codes else "")
