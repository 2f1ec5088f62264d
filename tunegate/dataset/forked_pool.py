"""Worker processes forked from this one, each fed its items and read for results over its own pipes.

    pool = ForkedPool(2)
    sent = pool.submit(read_part, part)    # to the worker with the fewest items outstanding
    sent.done()                            # without waiting: reads what the worker has sent so far
    value = sent.result()                  # waits for it; raises what fn raised, or WorkerDied
    pool.shutdown()

What tunegate.dataset.parallel uses where it may fork (Linux, one thread), instead of
concurrent.futures' ProcessPoolExecutor: that pool imports multiprocessing and runs two threads
beside this one (one feeds the workers, one takes their results and competes for the GIL while
this process reads a part itself). Importing it, starting one worker and running one small task
cost this process ~30 CPU ms, where a fork and two pipes cost ~3 ms: at 55 MB a check's second
process cost more CPU than the issue's budget had left (issue 33). No thread here: a result is read
from its worker's pipe when it is asked for, and `done` reads whatever has arrived without
blocking. A frame is a length (8 bytes, little-endian) and a pickle.
"""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import sys
from collections import deque
from collections.abc import Callable
from typing import Any

from tunegate.dataset.handoff import write_all
from tunegate.errors import RemoteTraceback, WorkerDied

HEADER = 8  # bytes of a frame's length
RESULT_PIPE = 1 << 20  # bytes a worker's result pipe holds, where the system allows it
READ_BYTES = 1 << 18  # per read of a result pipe


class Sent:
    """An item given to a worker: its result once the worker sends it."""

    __slots__ = ("_worker", "_frame")

    def __init__(self, worker: _Worker):
        self._worker = worker
        self._frame: bytes | None = None

    def done(self) -> bool:
        if self._frame is None:
            self._worker.receive(block=False)
        return self._frame is not None

    def result(self) -> Any:
        while self._frame is None:
            self._worker.receive(block=True)
        ok, value, trace = pickle.loads(self._frame)
        self._frame = None
        if ok:
            return value
        if trace:
            value.__cause__ = RemoteTraceback(trace)
        raise value


class _Worker:
    """One forked worker: its pid, the pipe it reads items from, the pipe this process reads its results from."""

    def __init__(self, pid: int, items: int, results: int):
        self.pid, self.items, self.results = pid, items, results
        self.waiting: deque[Sent] = deque()  # given, result not yet received, in the order given
        self._buffer = bytearray()
        self.ended = False

    def send(self, fn: Callable[[Any], Any], item: Any) -> Sent:
        data = pickle.dumps((fn, item), pickle.HIGHEST_PROTOCOL)
        view = memoryview(len(data).to_bytes(HEADER, "little") + data)
        while view:  # the worker may be waiting for this process to read its results first: read them meanwhile
            try:
                view = view[os.write(self.items, view):]
            except BlockingIOError:
                if _wait(self.results, self.items):
                    self.receive(block=False)
            except BrokenPipeError:
                self.ended = True
                raise WorkerDied(f"a worker process (pid {self.pid}) has ended") from None
        sent = Sent(self)
        self.waiting.append(sent)
        return sent

    def receive(self, block: bool) -> None:
        """Read what the worker has sent and hand each whole result to its item, in order: all
        there is, or with `block` until at least one result is whole. WorkerDied when the pipe
        ends while items are outstanding."""
        while self.waiting:
            try:
                chunk = os.read(self.results, READ_BYTES)
            except BlockingIOError:
                if not block:
                    return
                _wait(self.results)
                continue
            if not chunk:
                self.ended = True
                raise WorkerDied(f"a worker process (pid {self.pid}) ended before sending a result: the system "
                                 "may have killed it for memory")
            self._buffer += chunk
            if self._take_frames() and block:
                return

    def _take_frames(self) -> bool:
        """Whole frames in the buffer, each to the next waiting item; whether any was whole."""
        took = False
        while len(self._buffer) >= HEADER:
            size = int.from_bytes(self._buffer[:HEADER], "little")
            if len(self._buffer) < HEADER + size:
                break
            self.waiting.popleft()._frame = bytes(self._buffer[HEADER:HEADER + size])
            del self._buffer[:HEADER + size]
            took = True
        return took


class ForkedPool:
    """`count` workers, forked now; items go to the one with the fewest outstanding. `held` gives
    what is held while each forks: what another thread of this process must not be in the middle
    of then (the progress board's drawing)."""

    def __init__(self, count: int, held: Callable[[], Any] = contextlib.nullcontext):
        self._workers: list[_Worker] = []
        try:
            for _ in range(count):
                self._workers.append(_fork([fd for w in self._workers for fd in (w.items, w.results)], held))
        except BaseException:  # no process to fork (a limit on them): none left behind either
            self.shutdown()
            raise

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Sent:
        if any(w.ended for w in self._workers):
            raise WorkerDied("a worker process of this pool has ended")
        return min(self._workers, key=lambda w: len(w.waiting)).send(fn, item)

    def shutdown(self) -> None:
        """End every worker: an idle one at the end of its items, a busy one once its item is done
        (or at once, when it can no longer write to this process); then collect them."""
        for worker in self._workers:
            for fd in (worker.items, worker.results):
                try:
                    os.close(fd)
                except OSError:
                    pass
        for worker in self._workers:
            try:
                os.waitpid(worker.pid, 0)
            except ChildProcessError:
                pass
        self._workers = []


def _fork(inherited: list[int], held: Callable[[], Any]) -> _Worker:
    items_in, items_out = os.pipe()
    results_in, results_out = os.pipe()
    widen_pipe(results_out)
    for stream in (sys.stdout, sys.stderr):  # what is buffered is written once, not again by the worker
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    with held():
        pid = os.fork()
    if pid == 0:  # the worker: never returns
        for fd in (items_out, results_in, *inherited):  # the other workers' pipes: only this process holds them
            os.close(fd)
        _serve(items_in, results_out)
    os.close(items_in)
    os.close(results_out)
    os.set_blocking(results_in, False)
    os.set_blocking(items_out, False)
    return _Worker(pid, items_out, results_in)


def _serve(items: int, results: int) -> None:
    """A worker's life: read an item, send fn(item), until the pipe of items ends. It ends with
    os._exit: the parent's atexit handlers and finalizers (its temporary folders) are the parent's."""
    # What the parent held at the fork is never collected here: the garbage among it could run a
    # finalizer of the parent's (its shared index's removal), and a collection would touch (so copy)
    # every page the parent's objects lie on.
    gc.freeze()
    code = 0
    try:
        while True:
            header = _read_exact(items, HEADER)
            data = None if header is None else _read_exact(items, int.from_bytes(header, "little"))
            if data is None:
                break
            fn, item = pickle.loads(data)
            try:
                reply = (True, fn(item), None)
            except Exception as exc:  # raised in the parent at the item's turn, as if read there
                reply = (False, exc, _trace(exc))
            try:
                data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - an exception (or result) pickle cannot carry
                data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}"), reply[2]),
                                    pickle.HIGHEST_PROTOCOL)
            write_all(results, [len(data).to_bytes(HEADER, "little"), data])
    except BaseException:  # noqa: BLE001 - the parent is gone (a broken pipe) or a signal ended it
        code = 1
    finally:
        try:
            sys.stdout.flush()  # what fn printed (the parent's buffers were flushed before the fork)
        except BaseException:  # noqa: BLE001
            pass
        os._exit(code)


def _wait(readable: int, writable: int | None = None) -> bool:
    """Until `readable` has something to read (or its end) or `writable` room; whether `readable` has.
    poll, not select: select refuses a descriptor past 1023, which a long-lived process may hand out."""
    poller = select.poll()
    poller.register(readable, select.POLLIN)
    if writable is not None:
        poller.register(writable, select.POLLOUT)
    return any(fd == readable for fd, _ in poller.poll())


def _trace(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _read_exact(fd: int, size: int) -> bytes | None:
    """`size` bytes from fd; None at its end before the first byte."""
    got = bytearray()
    while len(got) < size:
        chunk = os.read(fd, size - len(got))
        if not chunk:
            if not got:
                return None
            raise EOFError("a frame cut short")
        got += chunk
    return bytes(got)


def widen_pipe(fd: int) -> None:
    """Let the pipe hold a part's results whole (Linux: 1 MiB, the most a process may ask for by
    default, instead of 64 KiB). A 4 MB part's results pickle to ~125 KB: a worker blocked on a full
    pipe waits until this process reads it, which it does only between its own parts (measured with
    concurrent.futures' pool: 3-8 ms a part, ~15 % of the worker's time at 220 MB; the wider pipe:
    -0.1 s wall and CPU at 220 MB, paired). Where the system refuses, the pipe stays as it is."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, RESULT_PIPE)  # type: ignore[attr-defined]
    except (ImportError, AttributeError, OSError, ValueError):
        pass
