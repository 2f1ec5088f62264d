"""Standby trainers: a candidate's fresh training process, started before the candidate is known.

Each is a real `python -m tunegate.fullrun.standby_trainer` process. One process serves one candidate and
is never handed out twice; one started with another environment is never used; none is left
running after `close`, nor after its parent is killed with SIGKILL.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.minirun import DATA, load_spec
from tests.support.paths import ROOT
from tests.support.processes import gone
from tunegate.fullrun.launcher import candidate_env, follow_launched
from tunegate.fullrun.standby import StandbyTrainers, hand_over
from tunegate.fullrun.standby_trainer import READY
from tunegate.sweep.start_ahead import start_trainers_ahead

SPEC = DATA / "good.yaml"


def _take_when_started(pool: StandbyTrainers, env: dict[str, str], within_s: float = 10.0):
    """The pool starts its trainers from a thread of its own: take one once it is there."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        proc = pool.take(env)
        if proc is not None:
            return proc
        time.sleep(0.05)
    return None


def test_each_standby_trainer_serves_one_candidate_and_the_plan_caps_how_many_start():
    pool, env = StandbyTrainers(), candidate_env(load_spec("good"), 1)
    pool.plan(env, total=2, width=1)
    first = _take_when_started(pool, env)
    second = _take_when_started(pool, env)  # the replacement started when the first was taken
    try:
        assert first is not None and second is not None and first.pid != second.pid
        time.sleep(0.5)
        assert pool.take(env) is None and pool.waiting() == 0  # two planned, two started
    finally:
        _stop(pool, first, second)


def _stop(pool, *taken):
    """Close the pool and end the trainers a test took from it (they wait for their arguments)."""
    pool.close()
    for proc in taken:
        if proc is not None:
            proc.kill()
            proc.wait()


def test_a_standby_trainer_started_with_another_environment_is_stopped_not_used():
    pool, spec = StandbyTrainers(), load_spec("good")
    pool.plan(candidate_env(spec, 1), total=1, width=1)
    deadline = time.monotonic() + 10
    while pool.waiting() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    (started,) = [proc for _, proc in pool._ready]
    assert pool.take(candidate_env(spec, 2)) is None  # other torch threads: a cold trainer instead
    assert started.poll() is not None and pool.waiting() == 0
    pool.close()


def test_standby_trainers_serve_and_are_replaced_when_only_mlflow_variables_changed_after_the_plan():
    pool, env = StandbyTrainers(), candidate_env(load_spec("good"), 1)
    pool.plan(env, total=2, width=1)
    later = {**env, "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}  # what opening the store sets
    first = _take_when_started(pool, later)
    second = _take_when_started(pool, later)  # the replacement (a 6-candidate sweep once trained 5 cold)
    try:
        assert first is not None and second is not None
    finally:
        _stop(pool, first, second)


def test_close_stops_every_waiting_trainer():
    pool, env = StandbyTrainers(), candidate_env(load_spec("good"), 1)
    pool.plan(env, total=3, width=2)
    deadline = time.monotonic() + 10
    while pool.waiting() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    waiting = [proc for _, proc in pool._ready]
    assert len(waiting) == 2
    pool.close()
    assert all(proc.poll() is not None for proc in waiting) and pool.waiting() == 0
    assert pool.take(env) is None


@pytest.mark.nightly  # ~7 s (torch's imports); tests/flows/test_sweep.py trains through one in `make test`
def test_a_standby_trainer_runs_the_trainer_on_the_arguments_it_is_handed(tmp_path: Path):
    pool, env = StandbyTrainers(), candidate_env(load_spec("good"), 1)
    pool.plan(env, total=1, width=1)
    proc = _take_when_started(pool, env)
    assert proc is not None
    result_path = tmp_path / "train_result.json"
    lines: list[str] = []
    assert hand_over(proc, ["--spec", str(tmp_path / "missing.yaml"), "--output-dir", str(tmp_path / "out"),
                            "--result", str(result_path), "--max-steps", "2"], env)
    result = follow_launched(proc, result_path, timeout_s=120, log=lines.append)
    # what `python -m tunegate.fullrun.trainer` answers for a spec it cannot read (TG709), from the file
    assert result.status == "failed" and result.codes == ["TG709"], lines
    assert "the spec cannot be read" in result.reason
    assert lines[0].startswith(READY) and proc.returncode == 1


def test_a_killed_parent_leaves_no_standby_trainer(tmp_path: Path):
    code = ("import sys, time\n"
            "from tests.support.minirun import load_spec\n"
            "from tunegate.fullrun.launcher import candidate_env\n"
            "from tunegate.fullrun.standby import STANDBY\n"
            "STANDBY.plan(candidate_env(load_spec('good'), 1), total=1, width=1)\n"
            "while not STANDBY.waiting(): time.sleep(0.05)\n"
            "print(STANDBY._ready[0][1].pid, flush=True)\n"
            "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        child = int(parent.stdout.readline())  # type: ignore[union-attr]
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert gone(child)


def test_no_trainer_starts_ahead_for_a_dask_sweep_or_one_with_nothing_to_try(monkeypatch):
    from tunegate.fullrun import standby
    from tunegate.spec.check import parse_spec

    pool = StandbyTrainers()
    monkeypatch.setattr(standby, "STANDBY", pool)
    sweep = ROOT / "tests" / "data" / "flows" / "parallel.yaml"
    dask = parse_spec(sweep)
    dask.spec.sweep.task_runner = "dask"  # its candidates import in Dask's worker processes
    start_trainers_ahead(dask, None)
    empty = parse_spec(sweep)
    empty.spec.sweep.candidates = []  # the flow reports it; starting ahead must not raise first
    start_trainers_ahead(empty, "list")
    time.sleep(0.3)
    assert pool.waiting() == 0 and pool._spawner is None
