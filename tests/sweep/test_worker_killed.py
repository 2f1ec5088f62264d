"""A 4-candidate sweep on a real local cluster of 2 worker processes (Dask LocalCluster, local Ray),
one worker killed mid-candidate.

The sweep runs as a user runs it (`python -m tunegate sweep SPEC --json`, `sweep.task_runner: dask`
or `ray`). Once a candidate's training process is running under a worker, that worker process gets
SIGKILL, as on a preempted node. Its training dies with it (PR_SET_PDEATHSIG), the engine replaces
the worker (Dask's nanny; Ray's raylet) and runs the candidate again (Ray: a task's max_retries), and
the sweep ends with every candidate scored once: one run each in MLflow, none left RUNNING. A rerun
then reuses all four.
"""
from __future__ import annotations

import json
import shutil
import time
from typing import Any

import pytest
import yaml

from tests.support.cli_flow import cli_env, kill_group, run_cli, start_cli
from tests.support.flows import FLOWS_DATA
from tests.support.worker_kill import DEADLINE_S, kill_a_worker_mid_candidate, mlflow_runs

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.nightly]  # ~4 min per engine: make test-nightly


@pytest.fixture(scope="module", params=["dask", "ray"])
def killed(request, tiny_cache, tmp_path_factory) -> dict[str, Any]:
    import psutil

    runner = request.param
    if runner == "ray":
        pytest.importorskip("prefect_ray", reason="sweep.task_runner ray needs pip install 'tunegate[ray]'")
    root = tmp_path_factory.mktemp(f"{runner}-kill")
    folder = root / "flows"
    shutil.copytree(FLOWS_DATA, folder)
    spec = yaml.safe_load((folder / "parallel.yaml").read_text())
    spec["sweep"].update(task_runner=runner, max_parallel=2)
    (folder / "swept.yaml").write_text(yaml.safe_dump(spec))
    env = cli_env(root / "prefect-home")
    args = ["sweep", str(folder / "swept.yaml"), "--json"]
    proc = start_cli(args, env, root / "killed.out", root / "killed.err")
    try:
        trainer_pid = kill_a_worker_mid_candidate(folder, proc)
        code = proc.wait(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    time.sleep(1)  # PR_SET_PDEATHSIG is delivered at once; give the kernel a moment to reap
    print("after the kill:", [(o["approved"], o["errored"], o["reason"][:120]) for o in
                               json.loads((root / "killed.out").read_text())["outcomes"]])
    rerun = run_cli(args, env, root / "rerun.out", root / "rerun.err", timeout=DEADLINE_S)
    return {"code": code, "err": (root / "killed.err").read_text()[-4000:],
            "summary": json.loads((root / "killed.out").read_text()),
            "trainer_alive": psutil.pid_exists(trainer_pid) and psutil.Process(trainer_pid).status() != "zombie",
            "rerun_code": rerun, "rerun": json.loads((root / "rerun.out").read_text()),
            "runs": mlflow_runs(f"sqlite:///{folder / 'mlflow.db'}")}


def test_the_sweep_with_a_killed_worker_still_scores_every_candidate(killed):
    assert killed["code"] == 0, killed["err"]
    outcomes = killed["summary"]["outcomes"]
    assert len(outcomes) == 4
    # retried on the new worker and approved, or marked errored with the reason: never rejected
    for o in outcomes:
        assert o["approved"] or (o["errored"] and o["reason"]), o


def test_the_killed_workers_training_died_with_it(killed):
    assert not killed["trainer_alive"]


def test_every_candidate_has_exactly_one_run_and_none_is_left_running(killed):
    candidates = [r for r in killed["runs"] if r["tags"].get("tunegate.kind") == "candidate"]
    ids = [r["tags"]["tunegate.candidate_id"] for r in candidates]
    assert len(ids) == len(set(ids)) == 4
    assert not [r for r in killed["runs"] if r["status"] == "RUNNING"]
    assert {o["run_id"] for o in killed["summary"]["outcomes"]} == {r["run_id"] for r in candidates}


def test_the_rerun_completes_reusing_every_approved_candidate(killed):
    assert killed["rerun_code"] == 0
    first = {o["run_id"]: o for o in killed["summary"]["outcomes"]}
    for o in killed["rerun"]["outcomes"]:
        assert o["run_id"] in first
        assert o["reused"] or first[o["run_id"]]["errored"]
