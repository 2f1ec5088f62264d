"""Pruning: stop a sweep candidate early from its validation loss (Optuna's median rule, or ASHA).

    plan = PrunePlan(rule="median", board=..., sweep=..., eval_every=5, train_steps=20)   # plan.py
    board = PruneBoard(plan.board, plan.sweep)      # board.py: the losses every candidate reports
    decide(plan, board, step, loss)                 # rules.py: Decision(prune, reason)

`callback.py` is the Trainer callback the candidate's training runs with (it imports transformers:
only the trainer imports it). The sweep builds the plan (`tunegate.sweep.budget`) and reads what
the training did from its `TrainResult` (status `pruned`, the step, the reason).
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"PruneBoard": "tunegate.pruning.board", "PrunePlan": "tunegate.pruning.plan",
         "Decision": "tunegate.pruning.rules", "decide": "tunegate.pruning.rules"}

__all__ = ["Decision", "PruneBoard", "PrunePlan", "decide"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
