"""A sweep's outcome in one table: every candidate, its verdict and its validation loss."""
from __future__ import annotations

import json

from pydantic import BaseModel

from tunegate.sweep.evaluate import CandidateOutcome


class SweepSummary(BaseModel):
    """The candidates in the order tried, the best by validation loss, and the counts."""

    outcomes: list[CandidateOutcome]
    best_run_id: str | None
    best: CandidateOutcome | None
    approved: int
    errored: int = 0  # candidates tunegate failed to evaluate: no verdict, a rerun tries them again
    train_digest: str | None = None  # the base's training data: the best is chosen among runs on it

    def text(self) -> str:
        lines = [f"{'#':>2}  {'verdict':<8} {'val loss':>9} {'train loss':>10}  candidate"]
        for i, o in enumerate(self.outcomes, 1):
            verdict = "approved" if o.approved else "error" if o.errored else "rejected"
            val = f"{o.val_loss:.4f}" if o.val_loss is not None else "-"
            train = f"{o.final_train_loss:.4f}" if o.final_train_loss is not None else "-"
            note = "" if o.approved else f"  ({o.reason})"
            if o.approved and not _comparable(o, self.train_digest):
                note = "  (trained on other data: not ranked against the others)"
            lines.append(f"{i:>2}  {verdict:<8} {val:>9} {train:>10}  {json.dumps(o.overrides)}{note}")
        if self.best is not None:
            lines.append(f"best: {json.dumps(self.best.overrides)} (val loss {self.best.val_loss:.4f}, "
                         f"spec {self.best.spec_path})")
        return "\n".join(lines)


def summarise(outcomes: list[CandidateOutcome], best_run_id: str | None,
              train_digest: str | None = None) -> SweepSummary:
    """The summary; the best is the lowest validation loss among candidates trained on the base's data
    (runs whose training data changed are never compared, as the source says)."""
    scored = [o for o in outcomes if o.approved and o.val_loss is not None and _comparable(o, train_digest)]
    best = min(scored, key=lambda o: o.val_loss) if scored else None
    return SweepSummary(outcomes=outcomes, best_run_id=best_run_id, best=best,
                        approved=sum(o.approved for o in outcomes), errored=sum(o.errored for o in outcomes),
                        train_digest=train_digest)


def _comparable(outcome: CandidateOutcome, train_digest: str | None) -> bool:
    return train_digest is None or outcome.train_digest in (None, train_digest)
