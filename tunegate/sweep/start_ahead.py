"""Start a sweep's slow, certain work before it is needed, while Prefect's local API starts.

    start_trainers_ahead(parsed, strategy)   # tunegate sweep: as soon as the spec is read
    start_imports_ahead(parsed)              # then, just before Prefect's local API starts
    with trainers_stopped_after(): ...       # the flow: what no candidate took is stopped
    start_mini_run_ahead(parsed)             # tunegate preflight: its mini-run's fork server

Issue 15 measured a 1-candidate sweep on the tiny model at 6x a bare loop of the same LoRA steps,
mostly in waits one after the other: Prefect's ephemeral API (~6 s, in its own process, while this
one sleeps in a health poll), then MLflow's imports (~2 s), then torch/transformers/peft for the
mini-run (~5 s), then the same again in the candidate's training process. Two things start here
instead, on the CPU the waits leave idle:

- the fork server (`tunegate.fullrun.forks`, Linux): one process that imports the training stack
  and forks a fresh child for each candidate's mini-run and short training; elsewhere the standby
  trainers (`tunegate.fullrun.standby`): the first `max_parallel` candidates' training processes,
  each a fresh process that imports the training stack and then waits for its candidate's arguments;
- one thread importing, in this process, the modules the flow is sure to import later: MLflow's
  client and SQL store first (the tracking session opens right after the data gate), then the
  training stack the mini-run imports (not when the fork server runs the mini-runs). Importing is
  all it does: no model, no store, no torch state. A module the other thread reaches first just
  waits for this one to finish it (Python's per-module import locks).

The charts need no import ahead: they are SVG text (tunegate.charts.svg), drawn in milliseconds
where matplotlib's import took ~0.45 CPU s of this process (issue 33).

Only for the threads runner: on Dask or Ray the candidates run in worker processes, which import
for themselves, and as deployment runs (`sweep.candidates_on: deployment`) in a worker's flow runs. The gate's order and verdicts are unchanged; only when the imports happen moves.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from tunegate.processes.followed import following_again
from tunegate.processes.import_ahead import TRACKING_MODULES, TRAINING_MODULES, import_ahead
from tunegate.spec.check import ParsedSpec


def start_trainers_ahead(parsed: ParsedSpec, strategy: str | None) -> None:
    """Start this sweep's fork server (threads runner, Linux: `tunegate.fullrun.forks`), else its
    standby trainers (`max_parallel` now, one more per one taken, one per planned candidate in
    all). Never raises: a spec the flow will reject, or a sweep with nothing to try, starts none,
    and the flow reports it as before."""
    spec = parsed.spec
    if spec is None or not trains_here(parsed):
        return
    from tunegate.errors import UsageError
    from tunegate.fullrun.forks import FORKS
    from tunegate.fullrun.launcher import candidate_env, torch_threads
    from tunegate.fullrun.standby import STANDBY

    try:
        total = spec.sweep.max_evals if (strategy or spec.sweep.strategy) == "nomad" else _planned(parsed, strategy)
    except UsageError:
        return
    width = spec.sweep.max_parallel
    env = candidate_env(spec, torch_threads(width))
    if total > 0 and FORKS.start(env):  # one process for every candidate's mini-run and training
        return
    STANDBY.plan(env, total=total, width=width)


def start_mini_run_ahead(parsed: ParsedSpec) -> bool:
    """Start the fork server for a preflight's mini-run (Linux), as soon as the spec is read: the
    training stack imports there, on the other core, while this process imports Prefect and MLflow
    and runs the data gate (in this process the two imported one after the other: one thread runs
    Python at a time). Its child runs the mini-run stage as it runs here (`mini_run_apart`), in the
    environment a launched run gets (`training_env`: the advisor's keys left out) with OpenMP's and
    MKL's threads at the mini-run's own torch threads (tunegate.training.runtime sets those either
    way; unset, torch's import starts their pools and the server, no longer one thread, refuses to
    fork). Every GPU stays visible, as to a mini-run here. Whether it runs."""
    if parsed.spec is None:
        return False
    from tunegate.fullrun.forks import FORKS
    from tunegate.fullrun.launcher import torch_threads, training_env

    threads = str(torch_threads(1))
    return FORKS.start({**training_env(parsed.spec), "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})


def stop_trainers_left() -> None:
    """Stop what no candidate took: the standby trainers, then the fork server."""
    from tunegate.fullrun.forks import FORKS
    from tunegate.fullrun.standby import STANDBY

    STANDBY.close()
    FORKS.close()


@contextlib.contextmanager
def trainers_stopped_after() -> Iterator[None]:
    """Stop, when the block ends, what no candidate took.

    A flow calls this rather than naming STANDBY and FORKS: on Dask, Prefect sends the running
    flow's function to the workers with each task, and cloudpickle copies it by value, with every
    module global it names; those two hold thread locks, which cannot be pickled, so every Dask
    sweep failed ("Could not serialize object of type LLGExpr"). A module's function is sent by name.
    """
    try:
        yield
    finally:
        stop_trainers_left()
        following_again()  # the candidates' threads are joined (tunegate.processes.followed)


def start_imports_ahead(parsed: ParsedSpec) -> threading.Thread:
    """Import what this process's sweep flow will import, in a daemon thread (the training stack
    only when the mini-runs run here: the threads runner)."""
    from tunegate.fullrun.forks import FORKS

    local = trains_here(parsed)
    training = () if FORKS.running() else TRAINING_MODULES  # the fork server's children run the mini-runs
    return import_ahead(TRACKING_MODULES + (training if local else ()))


def trains_here(parsed: ParsedSpec) -> bool:
    """Whether this process's sweep gates and trains its candidates (threads, not as deployment runs)."""
    spec = parsed.spec
    return spec is not None and spec.sweep.task_runner == "threads" and spec.sweep.candidates_on == "task_runner"


def _planned(parsed: ParsedSpec, strategy: str | None) -> int:
    from tunegate.sweep.candidates import propose

    return len(propose(parsed.require(), strategy))
