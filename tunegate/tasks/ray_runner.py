"""prefect-ray's RayTaskRunner for a sweep (`sweep.task_runner: ray`).

Without `sweep.address`: a Ray of this machine's own, started for the sweep and stopped after it
(`address="local"`, so a `ray start` cluster already running here is never joined by accident), with
`max_parallel` CPUs (each candidate asks for one, so at most max_parallel run at once), no dashboard
(no web server, no open port), a small object store (candidates hand on specs and reports, not
tensors), the GPUs this process may use when each candidate asks for one (Ray then sets
CUDA_VISIBLE_DEVICES for each candidate; `hardware.count` declared on a machine without any, so the
layout runs on a CPU machine too) and deliberate torch threads.
With `sweep.address`: that cluster, `ray://host:10001` (Ray Client) or `auto` (the one `ray start`
runs on this machine); its workers need tunegate installed, as Dask's do. `env` goes to every
worker (Ray's runtime_env): torch's threads and the CLI's Prefect API for a Ray on this machine,
only a configured PREFECT_API_URL for one elsewhere.
"""
from __future__ import annotations

import os
from typing import Any

from tunegate.errors import UsageError
from tunegate.fullrun.devices import parent_devices
from tunegate.spec.model import Spec
from tunegate.spec.runner_support import gpu_per_candidate

OBJECT_STORE_BYTES = 256 * 2**20  # Ray's default is 30% of the RAM, in /dev/shm: too much on a shared box


def ray_runner(spec: Spec, env: dict[str, str]) -> Any:
    """A new RayTaskRunner for one sweep (it starts and stops with the sweep-candidates flow run);
    `env`: what every Ray worker's environment adds (see above)."""
    sweep = spec.sweep
    try:
        from prefect_ray import RayTaskRunner
    except ImportError as exc:
        raise UsageError("sweep.task_runner ray needs prefect-ray: pip install 'tunegate[ray]'") from exc
    if sweep.address:
        init: dict[str, Any] = {"runtime_env": {"env_vars": env}}
        if sweep.address == "auto":
            # prefect-ray passes "auto" on as no address at all; ray.init(address="auto") refuses to
            # start a new Ray when none is running, which is what a spec naming a cluster means
            init["address"] = "auto"
        return RayTaskRunner(address=sweep.address, init_kwargs=init)
    init = {
        "address": "local", "num_cpus": sweep.max_parallel, "include_dashboard": False,
        "object_store_memory": OBJECT_STORE_BYTES,
        "runtime_env": {"env_vars": env}}
    if gpu_per_candidate(spec):
        init["num_gpus"] = local_gpus(spec)
    return RayTaskRunner(init_kwargs=init)


def local_gpus(spec: Spec) -> int:
    """The GPUs a Ray of this machine is told it has: the ones this process may use (its
    CUDA_VISIBLE_DEVICES, else the machine's), at most hardware.count; on a machine with none, the
    declared hardware.count, so the GPU layout runs (on the CPU) where there is no GPU to find.

    Raises:
        UsageError: fewer GPUs are visible than hardware.count asks for (Ray would hand out devices
            that are not there, or other jobs' devices).
    """
    visible = parent_devices(os.environ)
    if visible and len(visible) < spec.hardware.count:
        raise UsageError(f"hardware.count is {spec.hardware.count} but only {len(visible)} GPU(s) are visible here "
                         f"(CUDA_VISIBLE_DEVICES={','.join(visible)}): lower hardware.count, or run where they are free")
    return min(spec.hardware.count, len(visible)) if visible else spec.hardware.count
