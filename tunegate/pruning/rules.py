"""The two pruning rules, as Optuna defines them, over the losses a sweep's board holds.

    decide(plan, board, step=5, loss=2.31)   # Decision(prune=True, reason="...") or Decision(prune=False)

median (Optuna's MedianPruner): at a step past `warmup_steps`, once `startup` completed candidates
reported a loss at that step, a candidate whose best loss so far is worse than their median stops.
Only completed candidates count: a pruned one's curve ended early and says nothing of the step.

asha (asynchronous successive halving; Optuna's SuccessiveHalvingPruner, Ray Tune's ASHA): rungs at
eval_every * eta**i steps (min_resource eval_every, reduction factor eta, no early-stopping rate). A
candidate reaching a rung goes on only if its loss there is among the best 1/eta of every loss
reported at that rung so far, its own included (at least the best one goes on): the first to
reach a rung always goes on, the second only if it beats the first when eta >= 2.

Neither rule stops a candidate at its last step: nothing is left to save.
"""
from __future__ import annotations

import statistics

from pydantic import BaseModel

from tunegate.pruning.board import PruneBoard
from tunegate.pruning.plan import PrunePlan


class Decision(BaseModel):
    """Whether to stop the candidate now, and why (a sentence a person reads in its run)."""

    prune: bool
    reason: str = ""


GO_ON = Decision(prune=False)


def decide(plan: PrunePlan, board: PruneBoard, step: int, loss: float) -> Decision:
    """Apply the plan's rule to the candidate's loss at `step` (already reported to the board)."""
    if step >= plan.train_steps:
        return GO_ON
    if plan.rule == "median":
        return median_rule(plan, board.own(plan.candidate), board.at_step(step, plan.candidate, True), step)
    return asha_rule(plan, loss, board.at_step(step, plan.candidate, False), step)


def median_rule(plan: PrunePlan, own: dict[int, float], completed: list[float], step: int) -> Decision:
    """Stop when the best loss so far is worse than the median of the completed candidates at `step`."""
    if step < plan.warmup_steps or len(completed) < plan.startup:
        return GO_ON
    best = min(loss for s, loss in own.items() if s <= step)
    median = statistics.median(completed)
    if best <= median:
        return GO_ON
    return Decision(prune=True, reason=f"pruned at step {step} of {plan.train_steps}: its best validation loss so "
                    f"far, {best:.4f}, is worse than the median {median:.4f} of the {len(completed)} completed "
                    f"candidate(s) at step {step} ({plan.rule_name()})")


def rung(plan: PrunePlan, step: int) -> int | None:
    """The rung `step` is (eval_every * eta**i), or None."""
    i, at = 0, plan.eval_every
    while at < step:
        i, at = i + 1, at * plan.eta
    return i if at == step else None


def asha_rule(plan: PrunePlan, loss: float, others: list[float], step: int) -> Decision:
    """At a rung, go on only when `loss` is among the best 1/eta of the losses reported there."""
    level = rung(plan, step)
    if level is None:
        return GO_ON
    competing = sorted([*others, loss])
    kept = max(len(competing) // plan.eta, 1)
    cutoff = competing[kept - 1]
    if loss <= cutoff:
        return GO_ON
    return Decision(prune=True, reason=f"pruned at rung {level} (step {step} of {plan.train_steps}): its validation "
                    f"loss {loss:.4f} is not among the best {kept} of the {len(competing)} candidate(s) that reached "
                    f"step {step} (the best 1/{plan.eta}; cut-off {cutoff:.4f}; {plan.rule_name()})")
