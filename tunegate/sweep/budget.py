"""What an approved sweep candidate may train: its steps, how often it is evaluated, its pruning plan.

    budget = sweep_budget(spec, spec_path, sweep_id=session.parent_run_id)
    budget.train_steps, budget.eval_every, budget.pruning   # 20, 5, PrunePlan(rule="median", ...)

`sweep.eval_every` defaults to a quarter of `train_steps` (rounded up) when a pruning rule is set: four
looks at each curve, the first early enough to save three quarters of a poor candidate's budget;
without pruning, only the evaluation at the end (as before). The pruning board is one SQLite file
per spec in `.tunegate/prune/` beside it; `sweep_id` (the sweep's MLflow parent run) keeps each
sweep's rows apart there (tunegate.pruning.board).
"""
from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel

from tunegate.pruning import PrunePlan
from tunegate.spec.model import Spec, SweepSpec


class Budget(BaseModel):
    """A candidate's training budget, as the sweep hands it to each candidate."""

    train_steps: int
    eval_every: int | None = None
    pruning: PrunePlan | None = None


def eval_interval(sweep: SweepSpec) -> int | None:
    """Steps between a candidate's evaluations; None: only at the end."""
    if sweep.eval_every is not None:
        return sweep.eval_every
    return math.ceil(sweep.train_steps / 4) if sweep.prune != "none" else None


def board_path(spec_path: str | Path) -> Path:
    """The SQLite file a spec's sweeps report their candidates' losses to."""
    path = Path(spec_path).resolve()
    return path.parent / ".tunegate" / "prune" / f"{path.stem}.sqlite"


def sweep_budget(spec: Spec, spec_path: str | Path, sweep_id: str) -> Budget:
    """The sweep's budget for every candidate (the pruning plan without a candidate's key yet)."""
    sweep = spec.sweep
    every = eval_interval(sweep)
    if sweep.prune == "none" or every is None:
        return Budget(train_steps=sweep.train_steps, eval_every=every)
    plan = PrunePlan(rule=sweep.prune, board=str(board_path(spec_path)), sweep=sweep_id, eval_every=every,
                     train_steps=sweep.train_steps, warmup_steps=sweep.prune_warmup_steps,
                     startup=sweep.prune_startup, eta=sweep.prune_eta)
    return Budget(train_steps=sweep.train_steps, eval_every=every, pruning=plan)
