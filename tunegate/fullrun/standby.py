"""Trainer processes started ahead of their candidate, so a sweep does not wait for their imports.

    STANDBY.plan(candidate_env(spec, threads), total=3, width=1)   # before the Prefect server starts
    proc = STANDBY.take(candidate_env(spec, threads))             # when a candidate is approved
    python -m tunegate.fullrun.standby_trainer                    # what each one runs

A sweep candidate's short training runs in a fresh process of its own (`launcher.train_apart`):
accelerate's process-wide AcceleratorState and torch's RNG must not leak from one candidate into
the next, and a crash of ours must end as an `error` verdict, not take the sweep down. A cold
trainer spends most of its life importing torch, transformers and peft (about 5 of its 7 CPU
seconds for the tiny model, issue 15). A standby trainer is the same fresh process, started
earlier: it imports the training stack, creates nothing (no model, no TrainingArguments, no
AcceleratorState), then waits for its one set of arguments on stdin and runs
`tunegate.fullrun.trainer.main` on them, exactly as the cold command line would. One process
trains one candidate; a used one is never handed out again, and each one taken is replaced while
the plan's budget lasts (one per candidate still to train), so at most `width` wait at once.

Every standby trainer is started by one long-lived thread of this module with a parent-death
signal (`die_with_parent`, tied by the kernel to the thread that forked), so none
outlives the command, however it ends; `close` (the end of a sweep, and atexit) stops the unused.
A process started with another environment than the candidate's (an API key dropped, other
torch threads) is never used: it is stopped and the candidate starts a cold one. Only MLflow's
variables may differ (the sweep sets MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT when it opens its
store, after the trainers started; nothing a standby imports reads them): the candidate's exact
environment is handed over with its arguments and set before the trainer starts.
"""
from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

STANDBY_COMMAND = [sys.executable, "-m", "tunegate.fullrun.standby_trainer"]
LATE_PREFIXES = ("MLFLOW_",)  # variables that may change after a start: no import of a standby reads them


class StandbyTrainers:
    """The waiting trainer processes of this process's sweep, and the budget for more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: list[tuple[dict[str, str], subprocess.Popen]] = []
        self._env: dict[str, str] | None = None
        self._budget = 0  # how many more it may start
        self._requests: queue.SimpleQueue[dict[str, str] | None] = queue.SimpleQueue()
        self._spawner: threading.Thread | None = None

    def plan(self, env: Mapping[str, str], total: int, width: int) -> None:
        """Start `min(width, total)` trainers with `env` now and one more per one taken, `total` in
        all; a second plan for the same environment changes nothing."""
        with self._lock:
            if self._current(env):
                return
            self._env, self._budget = dict(env), total
            starting = min(width, total)
            self._budget -= starting
        self._stop_ready(keep=dict(env))
        for _ in range(starting):
            self._request(dict(env))

    def take(self, env: Mapping[str, str]) -> subprocess.Popen | None:
        """A waiting trainer started as `env` would start one (`_same_start`), still alive, removed
        from the pool (and replaced while the budget lasts); None when there is none: start a cold one."""
        wanted, found, stale = dict(env), None, []
        with self._lock:
            while self._ready and found is None:
                started_with, proc = self._ready.pop(0)
                if _same_start(started_with, wanted) and proc.poll() is None:
                    found = proc
                else:
                    stale.append(proc)
            refill = found is not None and self._budget > 0 and self._current(wanted)
            if refill:
                self._budget -= 1
                self._env = wanted  # the next candidate's environment is this one's (MLflow's included)
        for proc in stale:
            _stop(proc)
        if refill:
            self._request(wanted)
        return found

    def waiting(self) -> int:
        """How many trainers wait for a candidate now."""
        with self._lock:
            return len(self._ready)

    def close(self) -> None:
        """Stop every trainer still waiting and start no more (the sweep is over)."""
        with self._lock:
            self._env, self._budget = None, 0
        self._stop_ready(keep=None)

    def _current(self, env: Mapping[str, str]) -> bool:
        """Whether `env` starts trainers as the plan does (call with the lock held)."""
        return self._env is not None and _same_start(self._env, env)

    def _stop_ready(self, keep: dict[str, str] | None) -> None:
        with self._lock:
            kept = [(env, proc) for env, proc in self._ready if keep is not None and _same_start(env, keep)]
            gone = [proc for env, proc in self._ready if (env, proc) not in kept]
            self._ready = kept
        for proc in gone:
            _stop(proc)

    def _request(self, env: dict[str, str]) -> None:
        with self._lock:
            if self._spawner is None:
                self._spawner = threading.Thread(target=self._spawn_forever, name="tunegate-standby", daemon=True)
                self._spawner.start()
                atexit.register(self.close)
        self._requests.put(env)

    def _spawn_forever(self) -> None:
        """The one thread that forks them: it lives as long as the process, and so do they at most."""
        while True:
            env = self._requests.get()
            with self._lock:
                if not self._current(env):  # the plan changed or closed while this waited
                    continue
            try:
                proc = subprocess.Popen(STANDBY_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1,
                                        env=env, start_new_session=True, preexec_fn=die_with_parent)
            except OSError:
                continue  # the candidate starts a cold one, which reports why it cannot start
            with self._lock:
                if self._current(env):
                    self._ready.append((env, proc))
                    continue
            _stop(proc)


def _same_start(started_with: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether a trainer started with `started_with` imported what one started with `wanted` would."""
    def early(env: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items() if not k.startswith(LATE_PREFIXES)}

    return early(started_with) == early(wanted)


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL it when the thread that started it dies (Linux).

    A sweep worker killed mid-candidate must not leave its training running: the retried candidate
    trains into the same folder. Elsewhere nothing is set and an orphan runs to its end.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


def hand_over(proc: subprocess.Popen, argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Give a waiting trainer its arguments (`python -m tunegate.fullrun.trainer` would take them)
    and the candidate's environment (through the pipe: it holds no API key, `training_env`);
    False when it died meanwhile."""
    try:
        proc.stdin.write(json.dumps({"argv": list(argv), "env": dict(env)}) + "\n")  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
    except (BrokenPipeError, OSError, ValueError):
        _stop(proc)
        return False
    return True


def _stop(proc: subprocess.Popen) -> None:
    """SIGKILL a waiting trainer's group (it only imported modules: nothing to save) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except (BrokenPipeError, OSError):
                pass


STANDBY = StandbyTrainers()
