"""Sweep candidates' children held after their mini-run, until the sweep decides: train there, or end.

    held_jobs.hold(spec_path, job, folder, env)    # tunegate.sweep.mini_run_apart: its report is read
    held = held_jobs.train(spec_path, argv, env)   # tunegate.fullrun.launcher.train_apart: None -> fork one
    held_jobs.tidy(held)                           # once held.job, now the training, has ended
    held_jobs.release(spec_path)                   # tunegate.sweep.evaluate, always: a rejected one ends

The child (`tunegate.fullrun.candidate_job`) reads its decision from a FIFO in its folder (`channel`),
one JSON line: what goes through it, the training's environment with its tokens (an HF or MLflow
token stays in a training's environment: `training_env` drops only the advisor's keys), never
reaches the disk, as a standby trainer's comes through its stdin. A candidate's child is found by
its spec file (absolute). Whatever no training took is ended by `release`, which every candidate's
evaluation calls when it ends, trained or not.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DECISION = "decision"  # the FIFO's name in the child's folder
END_WAIT_S = 10  # a released child reads its decision at once, then exits


@dataclass
class Held:
    """A candidate's child that ran its mini-run, and the folder its report and decision are in."""

    job: Any  # a tunegate.fullrun.forks.ForkedJob
    folder: Path
    env: dict[str, str]


_HELD: dict[str, Held] = {}
_GUARD = threading.Lock()


def _key(spec_path: str | Path) -> str:
    return str(Path(spec_path).resolve())


def hold(spec_path: str | Path, job: Any, folder: Path, env: dict[str, str]) -> None:
    """Keep `job` for the candidate's training; a child held before for the same spec is ended."""
    key = _key(spec_path)
    with _GUARD:
        earlier, _HELD[key] = _HELD.get(key), Held(job, folder, dict(env))
    if earlier is not None:
        _end(earlier)


def train(spec_path: str | Path, argv: list[str], env: dict[str, str]) -> Held | None:
    """Tell the candidate's held child to train with `argv` in `env`; it (its job's output is the
    training's from here on), or None: no child held, or one started for another environment
    (then ended: the caller forks a fresh one)."""
    from tunegate.fullrun.standby import _same_start

    with _GUARD:
        held = _HELD.pop(_key(spec_path), None)
    if held is None:
        return None
    if not _same_start(held.env, env):
        _end(held)
        return None
    try:
        _decide(held.folder, {"argv": list(argv), "env": dict(env)})
    except OSError:  # it died: the caller forks a fresh one
        _end(held)
        return None
    return held


def release(spec_path: str | Path) -> None:
    """End the candidate's held child, if one still waits (a rejected candidate, an errored one)."""
    with _GUARD:
        held = _HELD.pop(_key(spec_path), None)
    if held is not None:
        _end(held)


def tidy(held: Held) -> None:
    """Remove the folder of a child that trained, once it has ended (it read its decision first)."""
    shutil.rmtree(held.folder, ignore_errors=True)


def channel(folder: Path) -> Path:
    """The FIFO a candidate's child reads its decision from (this user's alone)."""
    path = folder / DECISION
    os.mkfifo(path, 0o600)
    return path


def _decide(folder: Path, decision: dict[str, Any]) -> None:
    """Write the decision to the child; OSError when it is gone (no reader: ENXIO; EPIPE mid-way)."""
    fd = os.open(folder / DECISION, os.O_WRONLY | os.O_NONBLOCK)  # never blocks on a child that died
    os.set_blocking(fd, True)  # the child reads as it comes, whatever its size
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(decision) + "\n")


def _end(held: Held) -> None:
    try:
        _decide(held.folder, {"argv": None})
        held.job.wait(END_WAIT_S)
    except (OSError, subprocess.TimeoutExpired):
        pass  # it dies with the fork server, at the latest when the sweep ends
    shutil.rmtree(held.folder, ignore_errors=True)
