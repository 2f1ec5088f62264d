"""The Prefect task runner a sweep's candidates run on, from `sweep.task_runner` and `sweep.address`.

    threads  ThreadPoolTaskRunner(2 x max_parallel): candidates in threads of the flow's process, at most
             max_parallel in their jobs (mini-run and short training; `tunegate.sweep.job_slots`), the
             others gated or logged beside them; each mini-run holds a per-process lock, each short
             training runs in a process of its own.
    dask     prefect-dask's DaskTaskRunner: on the scheduler at `sweep.address`, or a LocalCluster of
             `max_parallel` worker processes of one thread each, so the same spec runs on a laptop.
    ray      prefect-ray's RayTaskRunner (`tunegate.tasks.ray_runner`): on the cluster at
             `sweep.address`, or a local Ray of `max_parallel` CPUs and no dashboard.

With `sweep.candidates_on: deployment` the runner is threads whatever `task_runner` says (TG179):
each thread starts one candidate's flow run of `sweep.deployment` and waits for it; the deployment's
work pool (the gpu pool) is where the candidate runs.

One GPU per candidate (`sweep.gpu_per_candidate`, `tunegate.spec.runner_support.gpu_per_candidate`):
the candidates are submitted inside `candidate_resources(spec)`, which asks Dask for the worker
resource GPU=1 (`dask.annotate`) and Ray for num_gpus=1 (prefect-ray's `remote_options`). A local
Dask cluster then has one worker per declared GPU (hardware.count, at most max_parallel), each
holding GPU=1 and seeing only its own device (CUDA_VISIBLE_DEVICES); Ray pins the device itself.

Torch threads, deliberately: each local Dask or Ray worker and each candidate's training process get
OMP_NUM_THREADS = `tunegate.fullrun.launcher.torch_threads(max_parallel)`: the mini-run's short-run
setting (one thread unless TUNEGATE_TORCH_THREADS says otherwise, measured best in issue 15), never
more than a worker's share of the cores. torch's default, one thread per core in every process,
would run max_parallel x cores busy threads.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from tunegate.errors import UsageError
from tunegate.fullrun.devices import parent_devices
from tunegate.fullrun.launcher import torch_threads
from tunegate.spec.model import Spec
from tunegate.spec.runner_support import gpu_per_candidate


def task_runner(spec: Spec) -> Any:
    """A new task runner for one sweep (a runner instance starts and stops with one flow run)."""
    sweep = spec.sweep
    if sweep.candidates_on == "deployment":  # threads that each wait for a candidate's flow run elsewhere
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=sweep.max_parallel)
    if sweep.task_runner == "dask":
        return _dask(spec)
    if sweep.task_runner == "ray":
        from tunegate.tasks.ray_runner import ray_runner

        elsewhere = bool(sweep.address) and sweep.address != "auto"  # auto: a `ray start` on this machine
        return ray_runner(spec, prefect_api_env(local=False) if elsewhere else worker_env(sweep.max_parallel))
    from prefect.task_runners import ThreadPoolTaskRunner

    # max_parallel candidates in their jobs, as many beside them gated or logged (tunegate.sweep.job_slots)
    return ThreadPoolTaskRunner(max_workers=2 * sweep.max_parallel)


@contextlib.contextmanager
def candidate_resources(spec: Spec) -> Iterator[None]:
    """Within it, each submitted candidate asks its engine for one GPU, when the spec wants one."""
    runner = spec.sweep.task_runner
    if runner == "threads" or not gpu_per_candidate(spec) or spec.sweep.candidates_on == "deployment":
        yield
    elif runner == "dask":
        import dask

        with dask.annotate(resources={"GPU": 1}):
            yield
    else:
        from prefect_ray.context import remote_options

        with remote_options(num_gpus=1):
            yield


def worker_env(max_parallel: int) -> dict[str, str]:
    """What each local worker's environment adds: torch's threads (a candidate's share of this
    machine's cores) and the Prefect API this process reports to."""
    threads = str(torch_threads(max_parallel))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, **prefect_api_env()}


def prefect_api_env(local: bool = True) -> dict[str, str]:
    """PREFECT_API_URL of the API this process uses, also when it is the CLI's ephemeral one
    (`local`: for workers on this machine; the ephemeral API listens on 127.0.0.1 only).

    A worker process without it starts an ephemeral API of its own (measured 10-20 s per Ray
    worker here, and a Dask worker timed out starting it on the loaded machine), and its task runs
    land in that throwaway database instead of the sweep's.
    """
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return {"PREFECT_API_URL": str(PREFECT_API_URL.value())}
    if not local:
        return {}
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the one instance the CLI (or Prefect's first client) started
    return {"PREFECT_API_URL": server.api_url} if server.running else {}


def _dask(spec: Spec) -> Any:
    sweep = spec.sweep
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:
        raise UsageError("sweep.task_runner dask needs prefect-dask: pip install 'tunegate[dask]'") from exc
    if sweep.address:
        if gpu_per_candidate(spec):
            require_gpu_workers(sweep.address)
        return DaskTaskRunner(address=sweep.address)
    if gpu_per_candidate(spec):
        return DaskTaskRunner(cluster_class=gpu_cluster, cluster_kwargs={
            "gpus": min(spec.hardware.count, sweep.max_parallel), "env": worker_env(sweep.max_parallel)})
    return DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs={
        "n_workers": sweep.max_parallel, "threads_per_worker": 1, "processes": True,
        "dashboard_address": None,  # no web server: CI machines and laptops need no open port
        "env": worker_env(sweep.max_parallel)})


def require_gpu_workers(address: str, timeout_s: float = 20.0) -> None:
    """A Dask cluster that runs GPU candidates has a worker holding the resource GPU: otherwise every
    candidate, annotated GPU=1, waits for one forever (issue 31).

    Raises:
        UsageError: the scheduler cannot be reached, or none of its workers holds GPU.
    """
    from distributed import Client

    try:
        with Client(address, timeout=timeout_s) as client:
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"the Dask scheduler at sweep.address {address} cannot be reached: {exc}") from None
    if not any(w.get("resources", {}).get("GPU", 0) >= 1 for w in workers):
        raise UsageError(f"no worker of the Dask cluster at {address} holds the resource GPU, so candidates asking "
                         "for one (sweep.gpu_per_candidate) would wait forever: start its GPU workers with "
                         "`dask worker ADDRESS --nthreads 1 --resources GPU=1` (one per GPU, each with its own "
                         "CUDA_VISIBLE_DEVICES), or set sweep.gpu_per_candidate: false")


def gpu_cluster(gpus: int, env: dict[str, str], **kwargs: Any) -> Any:
    """A local Dask cluster of `gpus` single-threaded worker processes, worker i holding the resource
    GPU=1 and seeing the i-th of this process's own devices only (a LocalCluster gives every worker
    the same environment)."""
    from distributed import Nanny, Scheduler, SpecCluster

    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    return SpecCluster(workers=gpu_workers(gpus, env), scheduler=scheduler, **kwargs)


def gpu_workers(gpus: int, env: dict[str, str], parent: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Dask worker specs, one per GPU, each seeing one of the parent's devices: under SLURM's
    CUDA_VISIBLE_DEVICES=4,5 the workers see 4 and 5, not 0 and 1 (devices of other jobs)."""
    from distributed import Nanny

    devices = parent_devices(os.environ if parent is None else parent)
    if devices and gpus > len(devices):
        raise UsageError(f"the sweep asks for {gpus} GPU workers (hardware.count, at most sweep.max_parallel) but "
                         f"only {len(devices)} GPU(s) are visible here (CUDA_VISIBLE_DEVICES={','.join(devices)}): "
                         "lower hardware.count or sweep.max_parallel")
    # no GPU here (a CPU machine running the GPU layout, as the tests do): the declared ids
    devices = devices or [str(i) for i in range(gpus)]
    return {f"gpu-{i}": {"cls": Nanny, "options": {
        "nthreads": 1, "resources": {"GPU": 1}, "env": {**env, "CUDA_VISIBLE_DEVICES": devices[i]}}}
        for i in range(gpus)}
