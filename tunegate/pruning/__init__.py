"""Pruning: stop a sweep candidate early from its validation loss (Optuna's median rule, or ASHA).

    plan = PrunePlan(rule="median", board=..., sweep=..., eval_every=5, train_steps=20)   # plan.py
    board = PruneBoard(plan.board, plan.sweep)      # board.py: the losses every candidate reports
    decide(plan, board, step, loss)                 # rules.py: Decision(prune, reason)

`callback.py` is the Trainer callback the candidate's training runs with (it imports transformers:
only the trainer imports it). The sweep builds the plan (`tunegate.sweep.budget`) and reads what
the training did from its `TrainResult` (status `pruned`, the step, the reason).
"""
from tunegate.pruning.board import PruneBoard
from tunegate.pruning.plan import PrunePlan
from tunegate.pruning.rules import Decision, decide

__all__ = ["Decision", "PruneBoard", "PrunePlan", "decide"]
