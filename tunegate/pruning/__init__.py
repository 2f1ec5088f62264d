"""Pruning: stop a sweep candidate early from its validation loss (Optuna's median rule, or ASHA).

    plan = PrunePlan(rule="median", board=..., sweep=..., eval_every=5, train_steps=20)   # plan.py
    board = PruneBoard(plan.board, plan.sweep)      # board.py: the losses every candidate reports
    decide(plan, board, step, loss)                 # rules.py: Decision(prune, reason)

`callback.py` is the Trainer callback the candidate's training runs with (it imports transformers:
only the trainer imports it). The sweep builds the plan (`tunegate.sweep.budget`) and reads what
the training did from its `TrainResult` (status `pruned`, the step, the reason).
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"PruneBoard": "tunegate.pruning.board", "PrunePlan": "tunegate.pruning.plan",
         "Decision": "tunegate.pruning.rules", "decide": "tunegate.pruning.rules"}

__all__ = ["Decision", "PruneBoard", "PrunePlan", "decide"]
__getattr__ = front_door(__name__, _HOME)
