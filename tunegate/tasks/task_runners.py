"""The Prefect task runner a sweep's candidates run on, from `sweep.task_runner` and `sweep.address`.

    threads  ThreadPoolTaskRunner(max_parallel): candidates in threads of the flow's process; each
             mini-run holds a per-process lock, each short training runs in a process of its own.
    dask     prefect-dask's DaskTaskRunner: on the scheduler at `sweep.address`, or a LocalCluster of
             `max_parallel` worker processes of one thread each, so the same spec runs on a laptop.

Torch threads, deliberately: each local Dask worker and each candidate's training process get
OMP_NUM_THREADS = `tunegate.fullrun.launcher.torch_threads(max_parallel)`: the mini-run's short-run
setting (one thread unless TUNEGATE_TORCH_THREADS says otherwise, measured best in issue 15), never
more than a worker's share of the cores. torch's default, one thread per core in every process,
would run max_parallel x cores busy threads.
"""
from __future__ import annotations

from typing import Any

from tunegate.fullrun.launcher import torch_threads
from tunegate.spec.model import SweepSpec


def task_runner(sweep: SweepSpec) -> Any:
    """A new task runner for one sweep (a runner instance starts and stops with one flow run)."""
    if sweep.task_runner == "dask":
        return _dask(sweep)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=sweep.max_parallel)


def _dask(sweep: SweepSpec) -> Any:
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:
        from tunegate.errors import UsageError

        raise UsageError("sweep.task_runner dask needs prefect-dask: pip install 'tunegate[dask]'") from exc
    if sweep.address:
        return DaskTaskRunner(address=sweep.address)
    threads = str(torch_threads(sweep.max_parallel))
    return DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs={
        "n_workers": sweep.max_parallel, "threads_per_worker": 1, "processes": True,
        "dashboard_address": None,  # no web server: CI machines and laptops need no open port
        "env": {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}})
