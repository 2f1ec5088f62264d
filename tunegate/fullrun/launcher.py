"""Launch `python -m tunegate.fullrun.trainer` under accelerate, torchrun or plain Python, and read its result.

    cmd = launch_command(spec, spec_path, output_dir, result_path)
    result = run_launched(cmd, result_path, log=logger.info, env=training_env(spec))

The launchers are started as `<this python> -m accelerate.commands.launch` (what the `accelerate
launch` script runs) and `<this python> -m torch.distributed.run` (what `torchrun` runs), so the
run uses the same environment as the caller even where those scripts are not on PATH.

Processes per node: `full_run.num_processes`, else `hardware.count` (spread over the nodes); 1 on
a machine without CUDA. Multi-node runs read the node layout from the environment, under
torchrun's own names: NNODES (> 1 makes it multi-node), NODE_RANK, MASTER_ADDR, MASTER_PORT.
"""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tunegate.errors import LaunchConfigError
from tunegate.fullrun import held_jobs
from tunegate.fullrun.devices import planned_devices
from tunegate.fullrun.forks import FORKS
from tunegate.fullrun.result import (
    NO_RESULT,
    OUT_OF_MEMORY,
    TIMED_OUT,
    TrainResult,
    failed,
    failed_ranks,
    rank_result_path,
)
from tunegate.fullrun.standby import STANDBY, hand_over
from tunegate.fullrun.standby import die_with_parent as _dying_with_parent
from tunegate.processes.followed import followed, stop_group
from tunegate.spec.model import Spec
from tunegate.tracking.record import secret_env_names
from tunegate.training.hub_kernels import kernels_env

MIXED_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp32": "no"}
DEFAULT_PORT = "29500"  # torch.distributed's default
TAIL_LINES = 40  # output lines kept for the reason of a run that died without a result


def has_cuda() -> bool:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def num_processes(spec: Spec, nodes: int = 1, cuda: bool | None = None, log: Callable[[str], None] = print) -> int:
    """Processes per node: full_run.num_processes, else hardware.count over the nodes; without CUDA 1,
    unless full_run.num_processes asks for more: CPU processes in data parallel over gloo (what the
    multi-GPU path runs, on a machine without one: issue 31's DDP defects were reproduced so)."""
    wanted = spec.full_run.num_processes or max(1, spec.hardware.count // nodes)
    if not (has_cuda() if cuda is None else cuda) and not spec.full_run.num_processes:
        if wanted > 1:
            log(f"no CUDA on this machine: launching 1 process instead of {wanted} (one per GPU)")
        return 1
    return wanted


def launch_command(spec: Spec, spec_path: Path, output_dir: Path, result_path: Path, max_steps: int | None = None,
                   *, env: Mapping[str, str] | None = None, cuda: bool | None = None,
                   log: Callable[[str], None] = print, resume: bool = False) -> list[str]:
    """The command line that runs `tunegate.fullrun.trainer` for this spec under `full_run.launcher`."""
    env = os.environ if env is None else env
    nodes = int(env.get("NNODES", "1"))
    cuda = has_cuda() if cuda is None else cuda
    per_node = num_processes(spec, nodes, cuda, log)
    # absolute: the launched processes may start in another folder
    program = ["-m", "tunegate.fullrun.trainer", "--spec", str(Path(spec_path).absolute()),
               "--output-dir", str(Path(output_dir).absolute()), "--result", str(Path(result_path).absolute())]
    program += ["--max-steps", str(max_steps)] if max_steps else []
    program += ["--resume"] if resume else []
    launcher = spec.full_run.launcher
    if launcher == "accelerate" and per_node > 1 and not cuda:
        log(f"{per_node} processes on the CPU: launched with torchrun (gloo), as accelerate launch runs one on a CPU")
        launcher = "torchrun"
    if launcher == "python":
        return [sys.executable, *program]
    if launcher == "torchrun":
        return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(per_node),
                *_torchrun_nodes(nodes, env), *program]
    return [sys.executable, "-m", "accelerate.commands.launch", *_accelerate_layout(per_node, nodes, env),
            "--mixed_precision", MIXED_PRECISION[spec.training.precision],
            # torch.compile is the Trainer's (training.compile), not accelerate's dynamo wrapper
            "--dynamo_backend", "no", *program]


def _accelerate_layout(per_node: int, nodes: int, env: Mapping[str, str]) -> list[str]:
    # accelerate counts processes over all machines; --multi_gpu needs at least two of them
    total = per_node * nodes
    args = ["--num_processes", str(total), "--num_machines", str(nodes)]
    if total > 1:
        args.append("--multi_gpu")
    if total > 1 and nodes == 1:  # not accelerate's fixed 29500: parallel runs on one machine would collide
        args += ["--main_process_port", str(_free_port())]
    if nodes > 1:
        args += ["--machine_rank", env.get("NODE_RANK", "0"), "--main_process_ip", _master(env),
                 "--main_process_port", env.get("MASTER_PORT", DEFAULT_PORT)]
    return args


def _torchrun_nodes(nodes: int, env: Mapping[str, str]) -> list[str]:
    if nodes <= 1:
        return ["--standalone"]  # a local rendezvous on a free port: parallel runs do not collide
    return ["--nnodes", str(nodes), "--node_rank", env.get("NODE_RANK", "0"), "--master_addr", _master(env),
            "--master_port", env.get("MASTER_PORT", DEFAULT_PORT)]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _master(env: Mapping[str, str]) -> str:
    if not env.get("MASTER_ADDR"):
        raise LaunchConfigError("NNODES > 1 but MASTER_ADDR is not set: export the address of the node of rank 0")
    return env["MASTER_ADDR"]


def training_env(spec: Spec, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the launched run: the caller's, without the API keys the trainer never
    needs (the advisor's and the usual providers'), with unbuffered output so lines stream, with
    this tunegate first on PYTHONPATH, so the run imports the caller's code from any folder, and
    with transformers' hub kernels off unless the spec asks (tunegate.training.hub_kernels)."""
    env = dict(os.environ if base is None else base)
    for name in secret_env_names(spec):
        env.pop(name, None)
    kernels_env(spec, env)
    env["PYTHONUNBUFFERED"] = "1"
    source = str(Path(__file__).resolve().parents[2])  # the folder holding the tunegate package
    env["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_launched(cmd: Sequence[str], result_path: Path, timeout_s: float | None = None,
                 log: Callable[[str], None] = print, *, env: Mapping[str, str] | None = None,
                 cwd: Path | None = None, die_with_parent: bool = False) -> TrainResult:
    """Run the launch command, streaming its output lines to `log`, and return its result.

    Stale result files (the run's and other ranks') are removed first, so a crash is never read as
    the previous run's outcome. A run that ends without a result fails (TG707) with the tail of its
    output as the reason; one that outlives `timeout_s` is stopped, its whole process group, and
    fails (TG711); an out-of-memory on any rank is reported as one (TG706).
    """
    result_path = Path(result_path)
    for stale in [result_path, *(rank_result_path(result_path, r) for r, _ in failed_ranks(result_path))]:
        stale.unlink(missing_ok=True)
    try:
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", bufsize=1, env=dict(env) if env is not None else None,
                                cwd=cwd, start_new_session=True,  # its own group: a timeout stops every rank
                                preexec_fn=_dying_with_parent if die_with_parent else None)
    except OSError as exc:
        return failed(NO_RESULT, f"the launch command cannot start: {exc}")
    return follow_launched(proc, result_path, timeout_s, log)


def follow_launched(proc: subprocess.Popen, result_path: Path, timeout_s: float | None = None,
                    log: Callable[[str], None] = print) -> TrainResult:
    """Stream a started run's output lines to `log` until it ends, then read its result (as
    `run_launched`; the stale result file must be gone before the run was told to start)."""
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        stop_group(proc)

    timer = threading.Timer(timeout_s, expire) if timeout_s else None
    if timer:
        timer.start()
    try:
        with followed(proc):  # stopped with the command, if it is cut short (tunegate.processes.followed)
            for line in proc.stdout:  # type: ignore[union-attr]
                tail.append(line.rstrip("\n"))
                log(tail[-1])
            code = proc.wait()
    finally:
        if timer:
            timer.cancel()
    return _outcome(result_path, code, expired.is_set(), timeout_s, list(tail))


def _outcome(result_path: Path, code: int, timed_out: bool, timeout_s: float | None, tail: list[str]) -> TrainResult:
    shown = "\n".join(tail[-12:])
    if timed_out:
        return failed(TIMED_OUT, f"the run was stopped after its timeout of {timeout_s:g} s; last output:\n{shown}")
    main = None
    if result_path.is_file():
        try:
            main = TrainResult.read(result_path)
        except (ValidationError, ValueError) as exc:
            main = failed(NO_RESULT, f"the result file {result_path} cannot be read ({exc.__class__.__name__}); "
                          f"exit code {code}; last output:\n{shown}")
    return _with_other_ranks(main, result_path) or failed(
        NO_RESULT, f"the run exited with code {code} without writing {result_path.name}; last output:\n{shown}")


def _with_other_ranks(main: TrainResult | None, result_path: Path) -> TrainResult | None:
    """The run's result, unless another rank's failure says more: an out-of-memory on rank 3 made
    rank 0 see only the collective break (a crash) or write nothing (issue 31)."""
    if main is not None and (main.ok or OUT_OF_MEMORY in main.codes):
        return main
    ranks = failed_ranks(result_path)
    oom = next(((r, res) for r, res in ranks if OUT_OF_MEMORY in res.codes), None)
    rank, told = oom or (ranks[0] if ranks and main is None else (None, None))
    if told is None:
        return main
    return told.model_copy(update={"reason": f"on rank {rank}: {told.reason}"})


def launch(spec: Spec, spec_path: str | Path, log: Callable[[str], None] = print,
           timeout_s: float | None = None, live: Mapping[str, str] | None = None, resume: bool = False) -> TrainResult:
    """Run the trainer on an approved spec through its launcher (accelerate, torchrun or python).

    `live` (`tunegate.fullrun.live_run.live_env`) names the MLflow run its metrics stream to.
    """
    output = spec.full_run.output_dir
    output.mkdir(parents=True, exist_ok=True)
    result_path = output / "train_result.json"
    env = training_env(spec)  # drops the advisor's API key: the trainer never needs it
    cmd = launch_command(spec, Path(spec_path).resolve(), output, result_path, resume=resume, env=env)
    # each process one GPU of its own, never DataParallel over every device of the machine
    env = planned_devices(env, num_processes(spec, int(env.get("NNODES", "1")), log=lambda _: None))
    log("launching: " + " ".join(cmd))
    return run_launched(cmd, result_path, timeout_s=timeout_s, log=log, env={**env, **(live or {})})


def torch_threads(parallel: int, cores: int | None = None) -> int:
    """Intra-op threads for each of `parallel` short trainings (sweep candidates) on this machine.

    The short-run setting the mini-run uses (`tunegate.training.runtime`: 1 unless
    TUNEGATE_TORCH_THREADS says otherwise; issue 15 measured 7-28x slower candidates with torch's
    thread-per-core default on a loaded machine), and never more than a candidate's share of the cores.
    """
    import os

    from tunegate.training.runtime import SHORT_RUN_THREADS, THREADS_ENV

    value = os.environ.get(THREADS_ENV, "").strip()
    wanted = int(value) if value.isdigit() and int(value) > 0 else SHORT_RUN_THREADS
    cores = cores or os.cpu_count() or 1
    return max(1, min(wanted, cores // max(1, parallel)))


def train_apart(spec: Spec, spec_path: str | Path, output_dir: Path, max_steps: int, *, threads: int,
                log: Callable[[str], None] = print, timeout_s: float | None = None,
                eval_every: int | None = None, pruning: Any = None, token_cache: Path | None = None) -> TrainResult:
    """Train a sweep candidate's short budget in a process of its own (plain Python, one process).

    Never in the caller's process: accelerate keeps one process-wide AcceleratorState, which every
    new `TrainingArguments` resets, so two trainers in threads of one process break each other
    (an AttributeError mid-step). A process per training shares nothing but the files. When a
    standby trainer with this environment waits (`tunegate.fullrun.standby`: started ahead by the
    sweep, its imports done), it is that process, given these arguments; before that, the child of
    the sweep's fork server that ran the candidate's mini-run and waits (`tunegate.fullrun.held_jobs`),
    else a fresh child of the fork server (`tunegate.fullrun.forks`); otherwise a cold one. `eval_every` and
    `pruning` (a `tunegate.pruning.PrunePlan`) go to it as `--eval-every` and `--pruning`; it writes no
    checkpoint (`--no-checkpoints`): nothing resumes a candidate, and a checkpoint is its adapter again
    beside the optimizer's state (twice the adapter's parameters, in fp32). `token_cache`: a folder the
    candidates' trainers share their encoded data through (`--token-cache`, tunegate.fullrun.token_cache).
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    result_path = output_dir / "train_result.json"
    args = ["--spec", str(Path(spec_path).absolute()), "--output-dir", str(output_dir.absolute()),
            "--result", str(result_path.absolute()), "--max-steps", str(max_steps), "--no-checkpoints"]
    args += ["--eval-every", str(eval_every)] if eval_every else []
    args += ["--pruning", pruning.model_dump_json()] if pruning is not None else []
    args += ["--token-cache", str(Path(token_cache).absolute())] if token_cache is not None else []
    env = candidate_env(spec, threads)
    result_path.unlink(missing_ok=True)
    held = held_jobs.train(spec_path, args, env)  # the child that ran its mini-run (tunegate.fullrun.held_jobs)
    if held is not None:
        try:
            return follow_launched(held.job, result_path, timeout_s, log)
        finally:
            held_jobs.tidy(held)
    forked = FORKS.run("train", {"argv": args}, env)  # a fresh child of the fork server (tunegate.fullrun.forks)
    if forked is not None:
        return follow_launched(forked, result_path, timeout_s, log)
    waiting = STANDBY.take(env)  # the same fresh process, started earlier (tunegate.fullrun.standby)
    if waiting is not None and hand_over(waiting, args, env):
        return follow_launched(waiting, result_path, timeout_s, log)
    cmd = [sys.executable, "-m", "tunegate.fullrun.trainer", *args]
    return run_launched(cmd, result_path, timeout_s=timeout_s, log=log, env=env, die_with_parent=True)


def candidate_env(spec: Spec, threads: int) -> dict[str, str]:
    """A sweep candidate's training environment: `training_env` with torch's threads, which torch
    reads once, at start (so a standby trainer is started with them), and one GPU: the first of the
    worker's own (a Dask worker's, a Ray task's), never DataParallel over all of them."""
    env = planned_devices(training_env(spec), 1)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env
