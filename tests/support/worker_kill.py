"""Kill the engine worker (Dask or Ray) of a candidate while it trains, and read back MLflow's runs.

Used by the worker-kill tests in tests/sweep: a candidate's training runs as
`python -m tunegate.fullrun.trainer` under the worker process that evaluates it; SIGKILL of that
worker is what a preempted node does.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

DEADLINE_S = 900


def training_under_a_worker(folder: Path) -> Any:
    """A `tunegate.fullrun.trainer` process training into `folder`, started by an engine's worker
    (not by the CLI's own process, which is where the threads runner starts it)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "tunegate.fullrun.trainer" in cmd and any(str(folder) in part for part in cmd):
            parent = proc.parent()
            if parent is not None and "tunegate" not in " ".join(parent.cmdline()[:3]):
                return proc
    return None


def kill_a_worker_mid_candidate(folder: Path, proc) -> int:
    """SIGKILL the worker process of the first candidate seen training; return the trainer's pid."""
    start = time.monotonic()
    while (trainer := training_under_a_worker(folder)) is None:
        assert proc.poll() is None, "the sweep ended before any candidate trained"
        assert time.monotonic() - start < DEADLINE_S, "no candidate ever trained"
        time.sleep(0.2)
    trainer.parent().send_signal(signal.SIGKILL)
    return trainer.pid


def mlflow_runs(uri: str) -> list[dict[str, Any]]:
    """Every run of the `tunegate` experiment: id, status and tags."""
    from mlflow import MlflowClient

    from tunegate.tracking.runs import search_all

    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("tunegate").experiment_id
    return [{"run_id": r.info.run_id, "status": r.info.status, "tags": dict(r.data.tags)}
            for r in search_all(client, [experiment_id])]
