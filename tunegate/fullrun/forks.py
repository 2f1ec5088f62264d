"""The sweep's side of the fork server: one process that imported the training stack forks a fresh
child for each candidate's mini-run and short training.

    FORKS.start(candidate_env(spec, threads))          # as soon as the sweep knows it will train
    job = FORKS.run("train", {"argv": args}, env)      # a Popen-like child, or None: start a cold one
    for line in job.stdout: ...; job.wait()

Why (issue 15): every candidate's training process imported torch, transformers and peft again
(~5 CPU s each on the 2-core machine), and the sweep's own process imported them a third time
for the mini-runs. The fork server (`tunegate.fullrun.fork_server`) imports them once per sweep;
each job is a child forked from it, so it still starts with nothing of any other candidate's
(no model, no accelerate AcceleratorState, torch's RNG at its fresh-process default) and a crash
of ours ends only that child, as an `error` verdict. Where forking is not safe (the server has
more than one thread, CUDA initialised there) or not available (not Linux, the server died), a
job is refused and the caller starts a cold process as before.

A job is started only with the environment the server was started with (torch reads its thread
settings once, at import), MLflow's variables aside (the sweep sets them when it opens its store);
the child takes the job's exact environment before it runs.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping

from tunegate.fullrun.standby import _same_start, die_with_parent

SERVER_COMMAND = [sys.executable, "-m", "tunegate.fullrun.fork_server"]
# How long a job waits for its fork: the server's imports (~5 CPU s on the tiny model's machine,
# over a minute on a loaded one) and then milliseconds. Past it the server is taken for stuck.
FORK_WAIT_S = 600


class ForkedJob:
    """A child of the fork server, as much of `subprocess.Popen` as the launcher uses."""

    def __init__(self, pid: int, stdout_fd: int) -> None:
        self.pid = pid
        self.stdout = os.fdopen(stdout_fd, "r", encoding="utf-8", errors="replace", buffering=1)
        self.stdin = None
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _end(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked job {self.pid}", timeout or 0)
        if self.stdout is not None and not self.stdout.closed:
            self.stdout.close()
        return self.returncode  # type: ignore[return-value]


class ForkServer:
    """This process's fork server: started once per sweep, stopped with it (and with this process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # one request at a time: its line and its descriptor stay paired
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen | None = None
        self._env: dict[str, str] | None = None
        self._pending: dict[str, dict] = {}  # job id -> {"event", "reply", "job"}
        self._ids = itertools.count(1)

    def start(self, env: Mapping[str, str]) -> bool:
        """Start the server with `env` (Linux only); a second start for the same environment
        changes nothing, another environment stops the first. False when none runs."""
        if not sys.platform.startswith("linux"):
            return False
        with self._lock:
            if self._sock is not None and self._env is not None and _same_start(self._env, env):
                return True
        self.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        started: list[subprocess.Popen] = []
        spawned = threading.Event()

        def spawn_and_stay() -> None:  # the parent-death signal follows the thread that forks: it never ends
            try:
                started.append(subprocess.Popen(
                    [*SERVER_COMMAND, str(theirs.fileno())], pass_fds=(theirs.fileno(),), env=dict(env),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, preexec_fn=die_with_parent))
            except OSError:
                pass
            spawned.set()
            threading.Event().wait()

        threading.Thread(target=spawn_and_stay, name="tunegate-fork-server", daemon=True).start()
        spawned.wait()
        theirs.close()
        if not started:
            ours.close()
            return False
        with self._lock:
            self._sock, self._proc, self._env = ours, started[0], dict(env)
        threading.Thread(target=self._read_replies, args=(ours,), name="tunegate-fork-replies", daemon=True).start()
        atexit.register(self.close)
        return True

    def running(self) -> bool:
        with self._lock:
            return self._sock is not None

    def env(self) -> dict[str, str] | None:
        """The environment the server was started with (its jobs' default); None when none runs."""
        with self._lock:
            return dict(self._env) if self._sock is not None and self._env is not None else None

    def run(self, kind: str, args: dict, env: Mapping[str, str] | None = None) -> ForkedJob | None:
        """Fork a child running job `kind` with `args` in `env` (None: the server's own, a training
        environment without API keys); None when the server cannot (not started, another
        environment, refused as unsafe, gone): start a cold process."""
        with self._lock:
            sock, started_with = self._sock, self._env
            if sock is None or started_with is None:
                return None
            env = dict(started_with) if env is None else env
            if not _same_start(started_with, env):
                return None
            job = str(next(self._ids))
            read, write = os.pipe()
            waiter = {"event": threading.Event(), "reply": None, "job": None, "read": read}
            self._pending[job] = waiter
        try:
            message = json.dumps({"job": job, "kind": kind, "args": args, "env": dict(env)}) + "\n"
            with self._sending:
                socket.send_fds(sock, [message.encode()], [write])
        except OSError:
            os.close(read)
            self._forget(job)
            return None
        finally:
            os.close(write)
        if not waiter["event"].wait(FORK_WAIT_S):  # the server is stuck: stop it, or it could fork the job late
            self.close()
            os.close(read)
            return None
        reply = waiter["reply"] or {}
        if "pid" not in reply:
            os.close(read)
            return None
        return waiter["job"]  # built by the reader with this pipe's read end

    def _read_replies(self, sock: socket.socket) -> None:
        """Dispatch the server's replies; at EOF (it died) every job still running ends as killed."""
        buffer = b""
        jobs: dict[str, ForkedJob] = {}
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                self._dispatch(json.loads(line), jobs)
        with self._lock:
            if self._sock is sock:
                self._sock = None
            waiting, self._pending = self._pending, {}
        for waiter in waiting.values():
            waiter["event"].set()
        for job in jobs.values():
            job._end(-signal.SIGKILL)

    def _dispatch(self, reply: dict, jobs: dict[str, ForkedJob]) -> None:
        job_id = reply["job"]
        if "exit" in reply:
            job = jobs.pop(job_id, None)
            if job is not None:
                job._end(int(reply["exit"]))
            return
        with self._lock:
            waiter = self._pending.pop(job_id, None)
        if waiter is None:
            return
        waiter["reply"] = reply
        if "pid" in reply:
            waiter["job"] = jobs[job_id] = ForkedJob(int(reply["pid"]), waiter.pop("read"))
        waiter["event"].set()

    def _forget(self, job: str) -> None:
        with self._lock:
            self._pending.pop(job, None)

    def close(self) -> None:
        """Stop the server (its running children die with it) and fork no more."""
        with self._lock:
            sock, proc, self._sock, self._proc, self._env = self._sock, self._proc, None, None, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()


FORKS = ForkServer()
