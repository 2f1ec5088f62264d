"""A 2-candidate sweep on a local Ray (`sweep.task_runner: ray`), run as a user runs it.

`python -m tunegate sweep SPEC --json` on tests/data/flows/parallel.yaml's first two candidates,
two at a time: the CLI starts a Ray of its own (2 CPUs, no dashboard), each candidate is evaluated
in a Ray worker process, the workers report to the CLI's Prefect API (none starts one of its own),
every candidate lands in MLflow once, and no Ray process outlives the command.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_flow import cli_env, run_cli
from tests.support.flows import FLOWS_DATA

pytest.importorskip("prefect_ray", reason="sweep.task_runner ray needs pip install 'tunegate[ray]'")
# 198 s measured at load 9 on the 2-core machine, over make test's ~90 s for Ray: make test-nightly.
# make test's cheaper sibling: tests/sweep/test_gpu_per_candidate.py (the same RayTaskRunner, local
# Ray, remote options and worker environment, with probe tasks instead of trainings).
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.nightly]
RAY_DAEMONS = {"raylet", "gcs_server"}


def _ray_daemons_under(folder: str) -> list[str]:
    """Ray's daemons whose session lives under `folder` (this sweep's RAY_TMPDIR, not another test's)."""
    import psutil

    return [p.info["name"] for p in psutil.process_iter(["name", "cmdline"])
            if p.info["name"] in RAY_DAEMONS and folder in " ".join(p.info["cmdline"] or [])]


def _runs(uri: str) -> list[dict[str, Any]]:
    from mlflow import MlflowClient

    from tunegate.tracking.runs import search_all

    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("tunegate").experiment_id
    return [{"status": r.info.status, "tags": dict(r.data.tags)} for r in search_all(client, [experiment_id])]


@pytest.fixture(scope="module")
def on_ray(tiny_cache, tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("ray-sweep")
    folder = root / "flows"
    shutil.copytree(FLOWS_DATA, folder)
    spec = yaml.safe_load((folder / "parallel.yaml").read_text())
    spec["sweep"].update(task_runner="ray", max_parallel=2, candidates=spec["sweep"]["candidates"][:2])
    (folder / "ray.yaml").write_text(yaml.safe_dump(spec))
    # Ray's sessions under a folder of this test's own; short, as Ray's unix socket paths must be
    ray_tmp = tempfile.mkdtemp(prefix="tg-ray-", dir="/tmp")
    try:
        code = run_cli(["sweep", str(folder / "ray.yaml"), "--json"],
                       cli_env(root / "prefect-home", RAY_TMPDIR=ray_tmp), root / "out", root / "err", timeout=900)
        time.sleep(1)  # ray.shutdown() has returned; let the kernel reap its daemons
        left = _ray_daemons_under(ray_tmp)
        sessions = [d.name for d in (Path(ray_tmp) / "ray").glob("session_2*")]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    err = Path(root / "err").read_text()
    return {"code": code, "err": err, "summary": json.loads((root / "out").read_text() or "{}"),
            "left": left, "sessions": sessions, "runs": _runs(f"sqlite:///{folder / 'mlflow.db'}")}


def test_both_candidates_are_approved_on_ray(on_ray):
    assert on_ray["code"] == 0, on_ray["err"][-4000:]
    outcomes = on_ray["summary"]["outcomes"]
    assert [(o["approved"], o["errored"], o["reason"]) for o in outcomes] == [(True, False, "")] * 2


def test_the_candidates_were_evaluated_in_ray_workers(on_ray):
    assert "Started a local Ray instance" in on_ray["err"]
    assert on_ray["err"].count("(evaluate-candidate pid=") > 0  # Ray prefixes a worker's lines so


def test_the_ray_workers_report_to_the_clis_prefect_api(on_ray):
    assert "Starting temporary server" not in on_ray["err"]


def test_every_candidate_has_exactly_one_mlflow_run_and_none_is_left_running(on_ray):
    candidates = [r for r in on_ray["runs"] if r["tags"].get("tunegate.kind") == "candidate"]
    assert len({r["tags"]["tunegate.candidate_id"] for r in candidates}) == len(candidates) == 2
    assert [r for r in on_ray["runs"] if r["status"] == "RUNNING"] == []


def test_no_ray_process_outlives_the_sweep(on_ray):
    assert len(on_ray["sessions"]) == 1  # the sweep's Ray ran under RAY_TMPDIR: the search below can see it
    assert on_ray["left"] == []
