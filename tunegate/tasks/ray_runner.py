"""prefect-ray's RayTaskRunner for a sweep (`sweep.task_runner: ray`).

Without `sweep.address`: a Ray of this machine's own, started for the sweep and stopped after it
(`address="local"`, so a `ray start` cluster already running here is never joined by accident), with
`max_parallel` CPUs (each candidate asks for one, so at most max_parallel run at once), no dashboard
(no web server, no open port), a small object store (candidates hand on specs and reports, not
tensors), `hardware.count` GPUs when each candidate asks for one (Ray then sets CUDA_VISIBLE_DEVICES
for each candidate; declared, so it runs on a CPU machine too) and deliberate torch threads.
With `sweep.address`: that cluster, `ray://host:10001` (Ray Client) or `auto` (the one `ray start`
runs on this machine); its workers need tunegate installed, as Dask's do. `env` goes to every
worker (Ray's runtime_env): torch's threads and the CLI's Prefect API for a Ray on this machine,
only a configured PREFECT_API_URL for one elsewhere.
"""
from __future__ import annotations

from typing import Any

from tunegate.errors import UsageError
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
        init["num_gpus"] = spec.hardware.count
    return RayTaskRunner(init_kwargs=init)
