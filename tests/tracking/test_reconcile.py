"""Runs left RUNNING by a crashed flow run are ended KILLED on the next pass; live ones are kept."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.support.paths import SUPPORT
from tests.support.tracking import EXPERIMENT
from tunegate.tracking.reconcile import reconcile_stale_runs
from tunegate.tracking.runs import KILLED_REASON, PARENT_TAG, open_candidate_run, start_parent
from tunegate.tracking.store import ensure_experiment

WORKER = SUPPORT / "tracking_worker.py"


def _sigkilled_flow(uri: str, flow_run_id: str) -> tuple[str, str]:
    """Run a process that opens a parent and a candidate run, then SIGKILL it mid-way."""
    proc = subprocess.Popen([sys.executable, str(WORKER), "hang", uri, flow_run_id],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().split()
        assert line and line[0] == "READY", proc.stderr.read()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return line[1], line[2]


def test_runs_of_a_sigkilled_flow_run_stay_running_until_reconciled_then_are_killed(client, store_uri):
    parent, child = _sigkilled_flow(store_uri, "flow-dead")
    # What MLflow alone leaves behind: both runs RUNNING, with no end time, forever.
    assert [client.get_run(r).info.status for r in (parent, child)] == ["RUNNING", "RUNNING"]
    assert client.get_run(child).info.end_time is None
    result = reconcile_stale_runs(client, EXPERIMENT, is_alive=lambda flow_run_id: flow_run_id != "flow-dead")
    assert sorted(result.killed) == sorted([parent, child])
    for run_id in (parent, child):
        run = client.get_run(run_id)
        assert run.info.status == "KILLED" and run.info.end_time is not None
        assert "flow run flow-dead is no longer running" in run.data.tags[KILLED_REASON]
    assert client.get_metric_history(child, "mini_run/loss")[0].value == 2.5  # what it logged is kept


def test_runs_of_a_live_flow_run_are_left_running(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-live")
    child = open_candidate_run(client, parent, "a" * 64).run_id
    result = reconcile_stale_runs(client, EXPERIMENT, is_alive=lambda flow_run_id: True)
    assert result.killed == []
    assert [client.get_run(r).info.status for r in (parent, child)] == ["RUNNING", "RUNNING"]


def test_liveness_is_asked_once_per_flow_run(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-dead")
    for cid in ("a" * 64, "b" * 64, "c" * 64):
        open_candidate_run(client, parent, cid)
    asked = []
    result = reconcile_stale_runs(client, EXPERIMENT, is_alive=lambda fid: asked.append(fid) or False)
    assert asked == ["flow-dead"] and len(result.killed) == 4


def test_an_untagged_child_of_a_dead_parent_is_killed_too(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-dead")
    experiment_id = ensure_experiment(client, EXPERIMENT, store_uri)
    # e.g. a run the HF Trainer opened under our parent: it carries no flow-run-id tag.
    nested = client.create_run(experiment_id, tags={PARENT_TAG: parent}).info.run_id
    result = reconcile_stale_runs(client, EXPERIMENT, is_alive=lambda fid: False)
    assert sorted(result.killed) == sorted([parent, nested])


def test_runs_tunegate_did_not_open_are_never_touched(client, store_uri):
    experiment_id = ensure_experiment(client, EXPERIMENT, store_uri)
    foreign = client.create_run(experiment_id).info.run_id
    reconcile_stale_runs(client, EXPERIMENT, is_alive=lambda fid: False)
    assert client.get_run(foreign).info.status == "RUNNING"


def test_an_unreachable_orchestrator_leaves_the_runs_alone(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-unknown")

    def is_alive(flow_run_id: str) -> bool:
        raise ConnectionError("Prefect API unreachable")

    result = reconcile_stale_runs(client, EXPERIMENT, is_alive)
    assert result.killed == [] and result.unknown == ["flow-unknown"]
    assert client.get_run(parent).info.status == "RUNNING"


def test_a_missing_experiment_has_nothing_to_reconcile(client):
    assert reconcile_stale_runs(client, "never-created", is_alive=lambda fid: False).killed == []


def test_a_terminated_process_ends_its_own_runs_killed_and_leaves_others_alone(client, store_uri):
    import socket

    from tunegate.tracking.session import HOST_TAG, PID_TAG, end_runs_of_process

    here = socket.gethostname()
    mine = start_parent(client, EXPERIMENT, "flow-mine", {HOST_TAG: here, PID_TAG: str(os.getpid())})
    child = open_candidate_run(client, mine, "candidate-1").run_id
    other = start_parent(client, EXPERIMENT, "flow-other", {HOST_TAG: here, PID_TAG: str(os.getpid() + 1)})
    ended = end_runs_of_process(client, EXPERIMENT, here, os.getpid(), "SIGTERM")
    assert sorted(ended) == sorted([mine, child])
    assert [client.get_run(r).info.status for r in (mine, child, other)] == ["KILLED", "KILLED", "RUNNING"]
    assert client.get_run(mine).data.tags[KILLED_REASON] == "SIGTERM"
