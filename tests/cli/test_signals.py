"""No process outlives a killed CLI flow; SIGTERM stops it cleanly (runs KILLED, exit 143).

The sweep runs as a user runs it (`python -m tunegate sweep SPEC --json`, Prefect's ephemeral
API on a private Prefect home). The signal goes to the CLI's pid only, not its process group: the
ephemeral Prefect server (uvicorn, a child of the CLI) used to stay behind as an orphan after
either signal. Afterwards nothing of the CLI's session may be left.
"""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.support.cli_flow import cli_env, kill_group, run_cli, start_cli
from tests.support.paths import DATA

pytestmark = pytest.mark.slow

DEADLINE_S = 600  # for the sweep to reach the point where the signal is sent
GONE_S = 30  # for every process of the session to end after the signal
ENDED_S = 90  # for the command to exit after SIGTERM: far less than a candidate's training in long-sweep.yaml


def running_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            (count,), = conn.execute("SELECT count(*) FROM runs WHERE status = 'RUNNING'")
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    return count


def statuses(db: Path) -> dict[str, str]:
    """run kind (parent, candidate) and id -> status."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute("SELECT t.value, r.run_uuid, r.status FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                            "WHERE t.key = 'tunegate.kind'")
        return {f"{kind}:{run_id}": status for kind, run_id, status in rows}


def session_processes(sid: int) -> list[psutil.Process]:
    """Processes still in the CLI's session (start_cli gives it a session of its own)."""
    left = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except (ProcessLookupError, psutil.Error):
            pass
    return left


def sweep_until(tmp_path: Path, ready) -> tuple:
    """Start the crash data's long sweep; return (process, its uvicorn server, the store) once `ready(db)` holds."""
    folder = tmp_path / "sweep"
    shutil.copytree(DATA / "crash", folder)
    db = folder / "mlflow.db"
    err = tmp_path / "sweep.err"
    proc = start_cli(["sweep", str(folder / "long-sweep.yaml"), "--json"], cli_env(tmp_path / "prefect-home"),
                     tmp_path / "sweep.out", err)
    wait_until(proc, err, lambda: ready(db), "the sweep never got there")
    (server,) = children(proc, "uvicorn")
    return proc, server, db


def wait_until(proc, err: Path, found, never: str):
    """What `found()` returns once it is truthy, while the command still runs (DEADLINE_S at most)."""
    start = time.monotonic()
    while not (result := found()):
        assert proc.poll() is None, err.read_text()[-3000:]
        assert time.monotonic() - start < DEADLINE_S, never
        time.sleep(0.2)
    return result


def children(proc, word: str) -> list[psutil.Process]:
    """The command's descendants with `word` in their command line."""
    return [p for p in psutil.Process(proc.pid).children(recursive=True) if word in " ".join(p.cmdline())]


def exit_code(proc) -> int | None:
    """The command's exit code; None when it is still running after ENDED_S (then it is killed)."""
    try:
        return proc.wait(timeout=ENDED_S)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return None


def assert_nothing_left(proc, server) -> None:
    deadline = time.monotonic() + GONE_S
    while (session_processes(proc.pid) or server.is_running()) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [" ".join(p.cmdline())[:80] for p in session_processes(proc.pid)]
    kill_group(proc)  # whatever the assertion finds, leave nothing behind for the next test
    assert left == [] and not server.is_running()


def test_sigkill_of_the_cli_takes_the_prefect_server_with_it(tmp_path, tiny_cache):
    proc, server, _ = sweep_until(tmp_path, lambda db: running_runs(db) >= 1)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert_nothing_left(proc, server)


def test_sigterm_ends_the_runs_killed_stops_the_server_and_exits_143(tmp_path, tiny_cache):
    # The sweep's parent run is open: the signal lands in the middle of the sweep.
    proc, server, db = sweep_until(tmp_path, lambda db: running_runs(db) >= 1)
    os.kill(proc.pid, signal.SIGTERM)
    assert exit_code(proc) == 143
    assert_nothing_left(proc, server)
    found = statuses(db)
    assert "RUNNING" not in found.values(), (found, (tmp_path / "sweep.err").read_text()[-3000:])
    assert [status for run, status in found.items() if run.startswith("parent:")] == ["KILLED"], found
    assert "terminated (SIGTERM)" in (tmp_path / "sweep.err").read_text()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"])
def test_a_signal_in_a_candidates_training_stops_it_and_logs_no_verdict(tmp_path, tiny_cache, signum, code):
    # The candidate's trainer (a child of the fork server) prints before its first step. The
    # signal reaches the CLI's main thread; the training is followed by a worker thread of
    # Prefect's task runner, which the runner joins while unwinding: unstopped, the command
    # waited for the candidate's whole budget (and after a Ctrl-C its parent run stayed RUNNING).
    proc, server, db = sweep_until(tmp_path, lambda db: training_started(db.parent))
    os.kill(proc.pid, signum)
    assert exit_code(proc) == code
    assert_nothing_left(proc, server)
    found = statuses(db)
    assert [status for run, status in found.items() if run.startswith("parent:")] == ["KILLED"], found
    assert [run for run in found if run.startswith("candidate:")] == [], found  # cut short: no verdict


def training_started(folder: Path) -> bool:
    return any(log.stat().st_size > 0 for log in (folder / ".tunegate" / "candidates").glob("*-train/train.log"))


def test_sigterm_during_the_full_run_stops_its_trainer(tmp_path, tiny_cache):
    # The trainer runs in a session of its own (a timeout stops its whole group): the command
    # stops it before it exits. Unstopped, it lived on until its next write to the closed pipe
    # (a step's line; a long evaluation or checkpoint writes none).
    folder = tmp_path / "project"
    shutil.copytree(DATA / "flows", folder)
    env = cli_env(tmp_path / "prefect-home")
    spec = str(folder / "long.yaml")
    assert run_cli(["preflight", spec], env, tmp_path / "preflight.out", tmp_path / "preflight.err") == 0
    proc = start_cli(["launch", spec], env, tmp_path / "launch.out", tmp_path / "launch.err")
    (trainer, *_) = wait_until(proc, tmp_path / "launch.err", lambda: children(proc, "tunegate.fullrun.trainer"),
                               "the trainer never started")
    os.kill(proc.pid, signal.SIGTERM)
    assert exit_code(proc) == 143
    assert not trainer.is_running(), "the command ended before its trainer"
    found = statuses(folder / "mlflow.db")
    assert "RUNNING" not in found.values() and "KILLED" in found.values(), found
