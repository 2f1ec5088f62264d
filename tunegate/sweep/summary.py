"""A sweep's outcome in one table: every candidate, its verdict, its warnings and its validation loss."""
from __future__ import annotations

import json

from pydantic import BaseModel

from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.winner import Launch
from tunegate.tracking.warning_tags import warnings_tag


class SweepSummary(BaseModel):
    """The candidates in the order tried, the best by validation loss, and the counts."""

    outcomes: list[CandidateOutcome]
    best_run_id: str | None
    best: CandidateOutcome | None
    approved: int
    errored: int = 0  # candidates tunegate failed to evaluate: no verdict, a rerun tries them again
    train_digest: str | None = None  # the base's training data: the best is chosen among runs on it
    pruned: int = 0  # approved candidates the sweep's pruning rule stopped early (sweep.prune)
    steps_saved: int = 0  # training steps the pruned candidates did not spend
    launch: Launch | None = None  # --launch-best: the winner's spec, its preflight and its full run

    def text(self) -> str:
        lines = [f"{'#':>2}  {'verdict':<8} {'val loss':>9} {'train loss':>10}  {'warnings':<20}  candidate"]
        for i, o in enumerate(self.outcomes, 1):
            val = f"{o.val_loss:.4f}" if o.val_loss is not None else "-"
            train = f"{o.final_train_loss:.4f}" if o.final_train_loss is not None else "-"
            note = "" if o.approved and o.pruned_at_step is None else f"  ({o.reason})"
            if o.approved and not _comparable(o, self.train_digest):
                note = "  (trained on other data: not ranked against the others)"
            lines.append(f"{i:>2}  {verdict(o):<8} {val:>9} {train:>10}  {shown_warnings(o):<20}  "
                         f"{json.dumps(o.overrides)}{note}")
        if self.pruned:
            lines.append(f"pruned: {self.pruned} candidate(s), {self.steps_saved} training step(s) saved")
        if self.best is not None:
            lines.append(f"best: {json.dumps(self.best.overrides)} (val loss {self.best.val_loss:.4f}, "
                         f"spec {self.best.spec_path})")
        if self.launch:
            lines.append(f"launch-best: {self.launch.message}")
        return "\n".join(lines)


def verdict(o: CandidateOutcome) -> str:
    """approved, pruned (approved, then stopped by the pruning rule), error or rejected."""
    if o.pruned_at_step is not None:
        return "pruned"
    return "approved" if o.approved else "error" if o.errored else "rejected"


def shown_warnings(o: CandidateOutcome) -> str:
    """`TG512 x22, TG511 x22`: the candidate's warnings, truncation first; `-` when none."""
    return warnings_tag(o.warnings) if o.warnings else "-"


def summarise(outcomes: list[CandidateOutcome], best_run_id: str | None,
              train_digest: str | None = None) -> SweepSummary:
    """The summary; the best is the lowest validation loss among candidates trained their whole budget
    on the base's data (runs whose training data changed are never compared, as the source says; a
    pruned candidate's loss is from the step it was stopped at)."""
    scored = [o for o in outcomes if o.approved and o.val_loss is not None and o.pruned_at_step is None
              and _comparable(o, train_digest)]
    best = min(scored, key=lambda o: o.val_loss) if scored else None
    pruned = [o for o in outcomes if o.pruned_at_step is not None]
    return SweepSummary(outcomes=outcomes, best_run_id=best_run_id, best=best,
                        approved=sum(o.approved for o in outcomes), errored=sum(o.errored for o in outcomes),
                        train_digest=train_digest, pruned=len(pruned),
                        steps_saved=sum(o.steps_saved or 0 for o in pruned))


def _comparable(outcome: CandidateOutcome, train_digest: str | None) -> bool:
    return train_digest is None or outcome.train_digest in (None, train_digest)
