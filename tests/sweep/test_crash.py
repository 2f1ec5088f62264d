"""kill -9 of a sweep midway, then a rerun: nothing redone, nothing lost, nothing left RUNNING, one parent.

The sweep runs as a user runs it (`python -m tunegate sweep SPEC --json`, Prefect's ephemeral
mode, one Prefect home shared by both runs). Once two of its four candidates are fully logged in
MLflow, the whole process group gets SIGKILL, as on a lost node: no handler, no atexit, no
`finally`. The rerun must find the finished candidates by id, end the dead flow run's runs KILLED
(its process is gone; the pid tag on the parent says so), continue the sweep's parent, finish the
rest, and pick the same best candidate as a sweep that was never interrupted (run in another folder).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_flow import cli_env, kill_group, run_cli, start_cli
from tests.support.paths import DATA

pytestmark = pytest.mark.slow

CRASH_DATA = DATA / "crash"
CANDIDATES = 4  # in tests/data/crash/sweep.yaml
COMPLETE_BEFORE_KILL = 2
KILL_DEADLINE_S = 600


@dataclass
class Crash:
    """What the store held right after the kill and after the rerun, and both sweeps' summaries."""

    before: dict[str, dict[str, Any]]
    after: dict[str, dict[str, Any]]
    resumed: dict[str, Any]
    uninterrupted: dict[str, Any]
    trained_before: dict[Path, int]
    prefect_home: Path

    @property
    def dead_parent(self) -> str:
        (rid,) = [rid for rid, run in self.before.items() if run["tags"].get("tunegate.kind") == "parent"]
        return rid

    @property
    def done_before(self) -> dict[str, dict[str, Any]]:
        return {rid: run for rid, run in self.before.items() if run["tags"].get("tunegate.complete") == "true"
                and run["tags"].get("tunegate.kind") == "candidate"}


def _complete_candidates(db: Path) -> int:
    """How many candidate runs are fully logged, read straight from the SQLite file the sweep writes."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            (count,), = conn.execute("SELECT count(*) FROM tags WHERE key = 'tunegate.complete' AND value = 'true'")
    except sqlite3.OperationalError:  # the store's schema is not created yet
        return 0
    return count


def _sweep_until_killed(folder: Path, env: dict[str, str]) -> None:
    """Start the sweep; SIGKILL its process group once COMPLETE_BEFORE_KILL candidates are logged."""
    start = time.monotonic()
    err = folder.parent / "killed.err"
    proc = start_cli(["sweep", str(folder / "sweep.yaml"), "--json"], env, folder.parent / "killed.out", err)
    try:
        while _complete_candidates(folder / "mlflow.db") < COMPLETE_BEFORE_KILL:
            assert proc.poll() is None, err.read_text()[-3000:]
            assert time.monotonic() - start < KILL_DEADLINE_S, "the sweep never logged two candidates"
            time.sleep(0.2)
    finally:
        kill_group(proc)
    assert proc.returncode == -9
    print(f"killed after {time.monotonic() - start:.1f} s")


def _sweep(folder: Path, env: dict[str, str], name: str) -> dict[str, Any]:
    out, err = folder.parent / f"{name}.out", folder.parent / f"{name}.err"
    start = time.monotonic()
    assert run_cli(["sweep", str(folder / "sweep.yaml"), "--json"], env, out, err) == 0, err.read_text()[-3000:]
    print(f"{name} sweep {time.monotonic() - start:.1f} s")
    return json.loads(out.read_text())


def _snapshot(uri: str) -> dict[str, dict[str, Any]]:
    """Every run of the experiment: status, end time, tags, and the length of each metric's history."""
    from mlflow import MlflowClient

    from tunegate.tracking.runs import search_all

    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("tunegate").experiment_id
    return {r.info.run_id: {"status": r.info.status, "end_time": r.info.end_time, "tags": dict(r.data.tags),
                            "history": {k: len(client.get_metric_history(r.info.run_id, k)) for k in r.data.metrics}}
            for r in search_all(client, [experiment_id])}


def _newest_mtime(folder: Path) -> int:
    return max(p.stat().st_mtime_ns for p in folder.rglob("*"))


def _prefect_state(prefect_home: Path, flow_run_id: str) -> str:
    with sqlite3.connect(f"file:{prefect_home / 'prefect.db'}?mode=ro", uri=True, timeout=30) as conn:
        (state,), = conn.execute("SELECT state_type FROM flow_run WHERE id = ?", (flow_run_id,))
    return state


@pytest.fixture(scope="module")
def crash(tiny_cache, tmp_path_factory: pytest.TempPathFactory) -> Crash:
    """Kill a sweep after two candidates, rerun it to the end; sweep a copy without interruption."""
    root = tmp_path_factory.mktemp("crash")
    crashed, clean, home = root / "crashed", root / "clean", root / "prefect-home"
    for folder in (crashed, clean):
        shutil.copytree(CRASH_DATA, folder)
    env = cli_env(home)
    uri = f"sqlite:///{crashed / 'mlflow.db'}"
    _sweep_until_killed(crashed, env)
    before = _snapshot(uri)
    trained = {p: _newest_mtime(p) for p in (crashed / ".tunegate" / "candidates").glob("*-train")}
    resumed = _sweep(crashed, env, "resumed")
    uninterrupted = _sweep(clean, env, "uninterrupted")
    return Crash(before, _snapshot(uri), resumed, uninterrupted, trained, home)


def test_what_the_kill_left_behind_is_two_finished_candidates_and_a_running_parent(crash):
    assert len(crash.done_before) == COMPLETE_BEFORE_KILL
    # Candidates run one at a time in order: an approved (FINISHED) and the diverging one (FAILED).
    assert sorted(run["status"] for run in crash.done_before.values()) == ["FAILED", "FINISHED"]
    assert crash.before[crash.dead_parent]["status"] == "RUNNING"  # MLflow alone never ends it


def test_candidates_finished_before_the_kill_are_reused_not_redone(crash):
    outcomes = crash.resumed["outcomes"]
    for rid, run in crash.done_before.items():
        (outcome,) = [o for o in outcomes if o["run_id"] == rid]
        assert outcome["reused"] is True
        now = crash.after[rid]
        assert (now["status"], now["end_time"]) == (run["status"], run["end_time"])
        assert now["history"] == run["history"]  # no metric point logged twice
        if outcome["approved"]:  # its short training did not run again either
            spec = Path(outcome["spec_path"])
            folder = spec.with_name(spec.stem + "-train")
            assert _newest_mtime(folder) == crash.trained_before[folder], f"{folder.name} was trained again"


def test_no_candidate_is_lost_and_none_has_two_runs(crash):
    candidates = {rid: r for rid, r in crash.after.items() if r["tags"].get("tunegate.kind") == "candidate"}
    ids = [r["tags"]["tunegate.candidate_id"] for r in candidates.values()]
    assert len(ids) == len(set(ids)) == len(crash.resumed["outcomes"]) == CANDIDATES
    assert {o["run_id"] for o in crash.resumed["outcomes"]} == set(candidates)
    assert all(r["tags"].get("tunegate.complete") == "true" for r in candidates.values())


def test_no_run_stays_running_and_the_rerun_continues_the_dead_flow_runs_parent(crash):
    assert not [rid for rid, r in crash.after.items() if r["status"] == "RUNNING"]
    # The same sweep: the rerun ended the dead flow run's parent KILLED, then continued it (one parent
    # holding all four candidates, never an empty second one), saying how the first attempt ended.
    parents = [rid for rid, r in crash.after.items() if r["tags"].get("tunegate.kind") == "parent"]
    assert parents == [crash.dead_parent]
    continued = crash.after[crash.dead_parent]
    assert continued["status"] == "FINISHED"
    assert "which ended KILLED" in continued["tags"]["tunegate.continued_from"]
    assert "is no longer running" in continued["tags"]["tunegate.continued_from"]
    assert {rid for rid, r in crash.after.items() if r["tags"].get("mlflow.parentRunId") == crash.dead_parent} \
        == {o["run_id"] for o in crash.resumed["outcomes"]}
    for rid, run in crash.before.items():  # a candidate caught mid-logging was finished by the rerun
        if run["status"] == "RUNNING" and rid != crash.dead_parent:
            assert crash.after[rid]["tags"].get("tunegate.complete") == "true"
    # Prefect still shows the killed flow run Running (no heartbeats or zombie detection here): the
    # reconciler knew it was dead from the pid tag, since the process is gone.
    flow_run_id = crash.before[crash.dead_parent]["tags"]["tunegate.flow_run_id"]
    assert _prefect_state(crash.prefect_home, flow_run_id) == "RUNNING"


def test_the_resumed_sweep_picks_the_best_candidate_of_an_uninterrupted_one(crash):
    assert crash.resumed["best"]["overrides"] == crash.uninterrupted["best"]["overrides"]
    for mine, theirs in zip(crash.resumed["outcomes"], crash.uninterrupted["outcomes"], strict=True):
        assert (mine["overrides"], mine["approved"]) == (theirs["overrides"], theirs["approved"])
        if theirs["val_loss"] is not None:
            assert mine["val_loss"] == pytest.approx(theirs["val_loss"], rel=1e-6)
