"""The child processes a command waits on, stopped when the command is cut short.

    with followed(proc):                       # the thread reading a training's or a mini-run's output
        for line in proc.stdout: ...
    with stopped_if_cut_short(): ...           # the main thread, around work that worker threads follow
    following_again()                          # once those threads are joined
    stop_group(proc)                           # SIGTERM to its group, SIGKILL after KILL_GRACE_S

Why: SIGTERM and Ctrl-C reach only the main thread. A sweep's candidates train in worker threads of
Prefect's task runner, each reading its training process's output; unwinding from the signal, the
runner joins those threads (`ThreadPoolExecutor.shutdown(wait=True)`), so a SIGTERM'd sweep went on
until its candidate had trained its whole budget (found when a CI run's signal landed in a
candidate's training: the command still ran 120 s later; on a GPU, hours). And a process the main
thread itself followed (the full run's trainer, in a session of its own) was left running when the
exception unwound past it.

Now a followed process is stopped when the block following it ends by an exception, and
`stopped_if_cut_short` stops every followed one when its block does, before any thread is
joined. A thread whose process was stopped so raises `TrainingStopped` (a KeyboardInterrupt, as
the signal is): no verdict is drawn from a run cut short and no run is logged for it. Until
`following_again()` (the sweep flow calls it once its candidates' threads are joined), a process
followed late (a worker thread that was just starting its candidate) is stopped at once.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from tunegate.errors import TrainingStopped

KILL_GRACE_S = 15  # between SIGTERM and SIGKILL: a trainer's launcher forwards the signal to its ranks

_lock = threading.Lock()
_running: dict[int, Any] = {}  # pid -> the Popen-like process (subprocess.Popen, forks.ForkedJob)
_stopped: set[int] = set()
_stopping = threading.Event()


@contextlib.contextmanager
def followed(proc: Any) -> Iterator[None]:
    """Follow `proc` (a started subprocess.Popen or forks.ForkedJob) for the block: stopped with
    the command when it is cut short (the block then raises TrainingStopped, whatever reading the
    ended process raised), and stopped when the block itself ends by an exception (no one reads its
    output any more)."""
    with _lock:
        _running[proc.pid] = proc
        if _stopping.is_set():  # followed late: the command is being cut short
            _stopped.add(proc.pid)
            _signal(proc, signal.SIGKILL)
    try:
        yield
    except BaseException as exc:
        stop_group(proc)
        if _let_go(proc):
            raise TrainingStopped(_stopped_message(proc)) from exc
        raise
    if _let_go(proc):
        raise TrainingStopped(_stopped_message(proc))


@contextlib.contextmanager
def stopped_if_cut_short() -> Iterator[None]:
    """Stop every followed process when the block ends by an exception (SIGTERM, Ctrl-C, a bug),
    while worker threads still follow them: a task runner joins those threads after the block."""
    try:
        yield
    except BaseException:
        stop_followed()
        raise


def stop_followed() -> None:
    """Stop every process followed now, all at once (SIGTERM to each group, one grace for all,
    then SIGKILL), and any followed later, until `following_again()`."""
    with _lock:
        _stopping.set()
        procs = list(_running.values())
        _stopped.update(proc.pid for proc in procs)
    _stop(procs, KILL_GRACE_S)


def following_again() -> None:
    """The threads that followed what `stop_followed` stopped are joined: what this process
    follows from now on is a later command's, not stopped at once (a worker serves many flow runs)."""
    _stopping.clear()


def stop_group(proc: Any, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM to the process's group (a launcher and its ranks), SIGKILL after `grace_s`."""
    _stop([proc], grace_s)


def _stop(procs: list[Any], grace_s: float) -> None:
    """SIGTERM to each running one's group at once, one grace for all of them, then SIGKILL."""
    running = [proc for proc in procs if proc.poll() is None]
    for proc in running:
        _signal(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for proc in running:
        if not _wait(proc, deadline - time.monotonic()):
            _signal(proc, signal.SIGKILL)


def _signal(proc: Any, sig: int) -> None:
    """`sig` to the group `proc` leads (it started a session of its own), else to `proc` alone."""
    try:
        os.killpg(proc.pid, sig)
        return
    except ProcessLookupError:  # no group of its own (or gone)
        pass
    except PermissionError:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, sig)


def _let_go(proc: Any) -> bool:
    """Stop following `proc`; whether the command's cut stopped it."""
    with _lock:
        _running.pop(proc.pid, None)
        stopped = proc.pid in _stopped
        _stopped.discard(proc.pid)
    return stopped


def _stopped_message(proc: Any) -> str:
    return f"process {proc.pid} was stopped: the command was cut short (SIGTERM, Ctrl-C or an error)"


def _wait(proc: Any, timeout: float) -> bool:
    """Whether `proc` ended within `timeout` s. Polled, never `wait()`: a forked job's wait closes
    its output, which the thread following it may be reading."""
    deadline = time.monotonic() + max(0.0, timeout)
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
