"""A fork server: import the training stack once, fork a fresh child for each candidate's job.

    python -m tunegate.fullrun.fork_server FD    # started by tunegate.fullrun.forks, never by hand

A sweep candidate's mini-run and its short training each need a process of their own, with
torch, transformers and peft imported (about 5 of a cold trainer's 7 CPU seconds on the tiny
model, issue 15). This process imports them once, creates nothing (no model, no tokenizer, no
TrainingArguments, no AcceleratorState, no torch op, so no OpenMP pool), and then forks one child
per job: the child is the same fresh process a cold start would be, minus the imports.

Forking is safe only from a process with one thread: a lock held by another thread at the fork
stays locked forever in the child. So before every fork it checks that the kernel lists one
thread for it (`/proc/self/task`, which counts OpenMP's and every native library's threads too)
and that CUDA was not initialised; otherwise it refuses the job and the sweep starts a cold
process instead. It never uses a tokenizer or a model itself, so the check holds for its life.

Protocol, on the Unix socket FD (the other end is the sweep's `ForkServer`): each request is one
JSON line {"job": id, "kind": "train"|"mini-run"|"candidate", "args": ..., "env": {...}} sent with one file
descriptor (SCM_RIGHTS), where the child's stdout and stderr go. Replies, one JSON line each:
{"job": id, "pid": pid} once forked, {"job": id, "refused": why}, {"job": id, "exit": code}
once reaped. EOF on the socket (the sweep ended) ends it; so does its parent's death (a
parent-death signal, set at its start).
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import time

from tunegate.fullrun.forked_jobs import forked_line, mini_run_job
from tunegate.processes.freed_memory import keep_freed_blocks
from tunegate.processes.held_collections import collections_held, own_process
from tunegate.processes.quick_exit import skip_library_teardown

READY = "fork server ready"
# A child's end wakes the server at once (SIGCHLD through `signal.set_wakeup_fd`); it also looks this
# often, should a wake-up be missed. It used to look every 0.05 s, and the sweep waited for that look
# at every job's end with no process running: 40 ms a job (benchmarks/fork_server_reap.py).
REAP_EVERY_S = 1.0
_wake: tuple[int, int] | None = None  # the pipe SIGCHLD writes into: (read end, write end)


def _import_training_stack() -> None:
    """What a trainer (tunegate.fullrun.trainer.import_stack) and a mini-run import before their
    first step, imported once."""
    import importlib

    from tunegate.fullrun.trainer import import_stack

    import_stack()
    for name in ("tunegate.gate", "tunegate.minirun.stage", "tunegate.minirun.session", "tunegate.minirun.steps",
                 "tunegate.fullrun.candidate_job"):
        importlib.import_module(name)
    _build_conversion_table()


def _build_conversion_table() -> None:
    """transformers 5 builds its table of checkpoint conversions (every model type's weight
    renamings, ~0.05 CPU s of regex compiles) on a process's first `from_pretrained`: every
    candidate's child built it again. Built here, each child finds it built (it copies the entry it
    uses); a transformers without the table builds what it needs itself."""
    try:
        from transformers.conversion_mapping import get_checkpoint_conversion_mapping
    except ImportError:
        return
    get_checkpoint_conversion_mapping("llama")


def unsafe_to_fork() -> str | None:
    """Why forking now could deadlock or break the child (None: it is safe)."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        return f"the fork server has {threads} threads"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised in the fork server"
    return None


def serve(sock: socket.socket) -> None:
    """Answer job requests until the socket closes; reap children as they end."""
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    ended = _wake_on_child_end()
    selector.register(ended, selectors.EVENT_READ)
    children: dict[int, str] = {}
    buffer, fds = b"", []  # the descriptors arrive with the first bytes of their request
    while True:
        for code, job in _reaped(children):
            _send(sock, {"job": job, "exit": code})
        ready = [key.fileobj for key, _ in selector.select(timeout=REAP_EVERY_S)]
        if ended in ready:
            _drain(ended)
        if sock not in ready:
            continue
        data, got, _, _ = socket.recv_fds(sock, 1 << 20, 16)
        if not data:
            return
        buffer += data
        fds.extend(got)
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            request = json.loads(line)
            out = fds.pop(0) if fds else os.open(os.devnull, os.O_WRONLY)
            why = unsafe_to_fork()
            if why is not None:
                os.close(out)
                _send(sock, {"job": request["job"], "refused": why})
                continue
            pid = _fork(request, out, sock)
            os.close(out)
            children[pid] = request["job"]
            _send(sock, {"job": request["job"], "pid": pid})


def _wake_on_child_end() -> int:
    """The read end of a pipe that gets a byte whenever a child ends (SIGCHLD, `signal.set_wakeup_fd`)."""
    global _wake
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    _wake = (read, write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # handled, not ignored: its number goes into the pipe
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    return read


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _reaped(children: dict[int, str]) -> list[tuple[int, str]]:
    """(exit code, job) of every child that ended; codes as subprocess gives them (-N: signal N)."""
    done = []
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        job = children.pop(pid, None)
        if job is not None:
            done.append((os.waitstatus_to_exitcode(status), job))
    return done


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall((json.dumps(message) + "\n").encode())


def _fork(request: dict, out: int, sock: socket.socket) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _become_fresh(request, out, sock)
        code = run_job(request["kind"], request["args"])
    except BaseException:  # noqa: BLE001  (the sweep reads the traceback in the job's output)
        import traceback

        traceback.print_exc()
    finally:
        _exit_now(code)
    return 0  # not reached


def _become_fresh(request: dict, out: int, sock: socket.socket) -> None:
    """In the child: a session of its own, its output to the job's pipe, the job's environment,
    fresh random seeds, default signal handlers; it dies with the fork server."""
    sock.close()
    if _wake is not None:  # the server's wake-up pipe is not the job's: a signal of its own must not reach it
        signal.set_wakeup_fd(-1)
        for fd in _wake:
            os.close(fd)
    os.setsid()  # its own process group: a timeout stops the job and whatever it started
    _die_with_parent()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.close(devnull)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    import random

    random.seed()  # as a fresh interpreter would: from the OS, not the server's state
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def run_job(kind: str, args: dict) -> int:
    """Run one job in this (forked) process; its exit code."""
    print(forked_line(), flush=True)
    if kind == "train":
        from tunegate.fullrun.trainer import main as train_main

        return train_main(args["argv"])
    if kind == "mini-run":
        return mini_run_job(args)
    if kind == "candidate":  # the mini-run, then the short training if the sweep approves it
        from tunegate.fullrun.candidate_job import candidate_job

        return candidate_job(args)
    raise ValueError(f"unknown job kind {kind!r}")


def _die_with_parent() -> None:
    import ctypes

    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent or parent == 1:
        os._exit(1)


def _exit_now(code: int) -> None:
    """Exit without the interpreter's teardown (as a standby trainer does), atexit handlers run."""
    import atexit

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def main() -> int:
    start = time.perf_counter()
    sock = socket.socket(fileno=int(sys.argv[1]))
    own_process()
    keep_freed_blocks()  # each job's steps reuse freed blocks, not fresh pages (tunegate.processes.freed_memory)
    # No collection while the stack imports (10 full ones walked it, 0.58 CPU s, issue 33); then
    # what the imports made, which lives as long as any child, is frozen: out of every collection
    # from now on. A job's full collections (transformers' and accelerate's, tunegate's
    # free_memory) otherwise walk the whole imported stack, 0.2-0.3 s each, ~0.8 CPU s of a
    # candidate's 3 (issue 15); and a collection no longer touches, so copies, the pages the
    # children share with this process.
    with collections_held():
        _import_training_stack()
    skip_library_teardown()  # a job's exit no longer unregisters torch's operators (tunegate.processes.quick_exit)
    print(f"{READY} (the training stack imported in {time.perf_counter() - start:.1f} s)", flush=True)
    serve(sock)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # no teardown of torch & co: nothing of its own is left to close
