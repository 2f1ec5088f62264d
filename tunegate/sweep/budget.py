"""What an approved sweep candidate may train: its steps, how often it is evaluated, its pruning plan.

    budget = sweep_budget(spec, spec_path, sweep_id=session.parent_run_id)
    budget.train_steps, budget.eval_every, budget.pruning   # 20, 5, PrunePlan(rule="median", ...)
    budget.token_cache                                       # .tunegate/candidates/tokens-<sweep>: removed at its end

`sweep.eval_every` defaults to a quarter of `train_steps` (rounded up) when a pruning rule is set: four
looks at each curve, the first early enough to save three quarters of a poor candidate's budget;
without pruning, only the evaluation at the end (as before). The pruning board is one SQLite file
per spec in `.tunegate/prune/` beside it; `sweep_id` (the sweep's MLflow parent run) keeps each
sweep's rows apart there (tunegate.pruning.board). The candidates' trainers share their encoded data
through a folder of the sweep's own beside the candidates (tunegate.fullrun.token_cache), which the
sweep removes when its candidates are done: the encoded copy of the data does not outlive it.
"""
from __future__ import annotations

import contextlib
import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from tunegate.pruning import PrunePlan
from tunegate.spec.model import Spec, SweepSpec


class Budget(BaseModel):
    """A candidate's training budget, as the sweep hands it to each candidate."""

    train_steps: int
    eval_every: int | None = None
    pruning: PrunePlan | None = None
    token_cache: str | None = None  # the folder the candidates' trainers share their encoded data through


def eval_interval(sweep: SweepSpec) -> int | None:
    """Steps between a candidate's evaluations; None: only at the end."""
    if sweep.eval_every is not None:
        return sweep.eval_every
    return math.ceil(sweep.train_steps / 4) if sweep.prune != "none" else None


def board_path(spec_path: str | Path) -> Path:
    """The SQLite file a spec's sweeps report their candidates' losses to."""
    path = Path(spec_path).resolve()
    return path.parent / ".tunegate" / "prune" / f"{path.stem}.sqlite"


def tokens_folder(spec_path: str | Path, sweep_id: str) -> Path:
    """The folder a sweep's candidates share their encoded data through, beside their own files."""
    path = Path(spec_path).resolve()
    return path.parent / ".tunegate" / "candidates" / f"tokens-{path.stem}-{sweep_id[:16]}"


STALE_TOKENS_S = 24 * 3600  # a token folder untouched this long is a killed sweep's: nothing reads it again


@contextlib.contextmanager
def tokens_removed(folder: str | None) -> Iterator[None]:
    """The sweep's token folder removed once its candidates are done, however they end; with it those
    of this spec's earlier sweeps that a kill left behind (untouched for STALE_TOKENS_S: a sweep still
    running there only encodes its data again)."""
    try:
        yield
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
            _remove_stale(Path(folder))


def _remove_stale(folder: Path) -> None:
    prefix, now = folder.name.rsplit("-", 1)[0] + "-", time.time()
    try:
        left = [p for p in folder.parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return
    for other in left:
        with contextlib.suppress(OSError):
            if now - other.stat().st_mtime > STALE_TOKENS_S:
                shutil.rmtree(other, ignore_errors=True)


def sweep_budget(spec: Spec, spec_path: str | Path, sweep_id: str) -> Budget:
    """The sweep's budget for every candidate (the pruning plan without a candidate's key yet). Candidates
    run as flow runs of a deployment (elsewhere, maybe another machine) share no token folder."""
    sweep = spec.sweep
    every = eval_interval(sweep)
    tokens = None if sweep.candidates_on == "deployment" else str(tokens_folder(spec_path, sweep_id))
    if sweep.prune == "none" or every is None:
        return Budget(train_steps=sweep.train_steps, eval_every=every, token_cache=tokens)
    plan = PrunePlan(rule=sweep.prune, board=str(board_path(spec_path)), sweep=sweep_id, eval_every=every,
                     train_steps=sweep.train_steps, warmup_steps=sweep.prune_warmup_steps,
                     startup=sweep.prune_startup, eta=sweep.prune_eta)
    return Budget(train_steps=sweep.train_steps, eval_every=every, pruning=plan, token_cache=tokens)
