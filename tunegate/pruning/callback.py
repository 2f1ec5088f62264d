"""The Trainer callback that reports a sweep candidate's validation losses and stops it when pruned.

    pruner = PruningCallback(plan, log=print)
    trainer = Trainer(..., callbacks=[pruner]); trainer.train()
    pruner.decision        # Decision(prune=True, reason=...) when the rule stopped it, else None
    pruner.finish("completed", step)    # what the median rule counts

Used by `tunegate.fullrun.trainer` when started with `--pruning PLAN`. A board that cannot be used
(a locked or unwritable file) turns pruning off for this candidate, said in its log: a pruning
problem never stops, rejects or crashes a candidate. One process per candidate (sweep candidates
train in plain Python, one process each).
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from tunegate.pruning.board import PruneBoard
from tunegate.pruning.plan import PrunePlan
from tunegate.pruning.rules import Decision, decide


class PruningCallback(TrainerCallback):
    """Report each evaluation's loss to the sweep's board; stop training when the plan's rule says so."""

    def __init__(self, plan: PrunePlan, log: Callable[[str], None]) -> None:
        self.plan, self.log = plan, log
        self.board = PruneBoard(plan.board, plan.sweep)
        self.decision: Decision | None = None
        self.off = ""  # why pruning is off for this candidate, once the board failed

    def _safely(self, call: Callable[..., Any], *args: Any) -> Any:
        if self.off:
            return None
        try:
            return call(*args)
        except (sqlite3.Error, OSError) as exc:
            self.off = f"{type(exc).__name__}: {exc}"
            self.log(f"pruning is off for this candidate: its board {self.plan.board} cannot be used ({self.off})")
            return None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self._safely(self.board.begin, self.plan.candidate)
        return control

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None,
                    **kwargs: Any) -> Any:
        loss = (metrics or {}).get("eval_loss")
        if not isinstance(loss, (int, float)) or not math.isfinite(loss):  # the health check judges that one
            return control
        step = state.global_step
        self._safely(self.board.report, self.plan.candidate, step, float(loss))
        decision = self._safely(decide, self.plan, self.board, step, float(loss))
        if decision is not None and decision.prune:
            self.decision = decision
            control.should_training_stop = True
            self.log(decision.reason)
        return control

    def finish(self, state: str, step: int) -> None:
        """Record how the training ended on the board (`completed` counts for the median rule)."""
        self._safely(self.board.end, self.plan.candidate, state, step)
