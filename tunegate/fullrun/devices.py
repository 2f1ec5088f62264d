"""Which GPUs each training process sees: exactly the ones it plans to use, within the parent's own list.

    env = planned_devices(training_env(spec), processes=1)   # CUDA_VISIBLE_DEVICES=<the first of ours>

One process on a machine of several GPUs (`hardware.count: 1`, every sweep candidate) otherwise sees
them all: accelerate uses every visible device and the HF Trainer wraps the model in
`nn.DataParallel` when `n_gpu > 1`, training N x the spec's batch with GPU 0 gathering everything
(issue 31). So every launched process is given `CUDA_VISIBLE_DEVICES` naming the devices it plans
to use, picked from the parent's own list: the scheduler's (SLURM, Kubernetes, a Dask worker's), else
every GPU of the machine, counted without importing torch (the NVIDIA driver lists one folder per GPU
under /proc/driver/nvidia/gpus). A machine with no GPU is left as it is.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from tunegate.errors import LaunchConfigError

ENV = "CUDA_VISIBLE_DEVICES"
DRIVER_GPUS = "/proc/driver/nvidia/gpus"


def parent_devices(env: Mapping[str, str], machine_gpus: int | None = None) -> list[str]:
    """The devices this process may hand out: its CUDA_VISIBLE_DEVICES as set (ids or UUIDs), else
    every GPU of the machine (`machine_gpus`, counted here when not given)."""
    if ENV in env:
        return [d.strip() for d in env[ENV].split(",") if d.strip()]
    count = gpu_count() if machine_gpus is None else machine_gpus
    return [str(i) for i in range(count)]


def planned_devices(env: Mapping[str, str], processes: int, machine_gpus: int | None = None) -> dict[str, str]:
    """`env` with CUDA_VISIBLE_DEVICES naming the first `processes` of the parent's devices (one each).

    Raises:
        LaunchConfigError: more processes than visible GPUs (each would not get one of its own).
    """
    devices = parent_devices(env, machine_gpus)
    if not devices:
        return dict(env)  # no GPU here: the CPU run needs no device list
    if processes > len(devices):
        raise LaunchConfigError(f"the run asks for {processes} processes, one per GPU, but only {len(devices)} "
                                f"GPU(s) are visible here ({ENV}={','.join(devices)}): lower hardware.count "
                                "(or full_run.num_processes), or run where that many GPUs are free")
    return {**env, ENV: ",".join(devices[:processes])}


def gpu_count() -> int:
    """GPUs of this machine, without importing torch: the driver's folder per GPU, else torch if loaded."""
    try:
        return len(os.listdir(DRIVER_GPUS))
    except OSError:
        pass
    torch = sys.modules.get("torch")
    try:
        return int(torch.cuda.device_count()) if torch is not None else 0
    except Exception:  # noqa: BLE001  (a broken CUDA install: no device to hand out)
        return 0
