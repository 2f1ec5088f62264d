"""Processes reading a file in parts, results handed back in order.

    with Workers.start(2) as pool:
        for result in pool.in_order(read_part, parts):
            ...

Processes, not threads: the per-record work is Python code and would hold the GIL. The pool is
started once per gate run and serves every file; each worker is given two parts at a time and the
gate reads ahead only while fewer than `2 x count + 1` parts wait to be merged, so memory stays
bounded whatever the file's size.
The gate's own process reads too: it merges the results in file order, and whenever the next one
is not ready it reads the next part itself rather than wait, so `count` processes are this one and
`count - 1` workers. (Before, `count` workers read beside a process that mostly waited: on 2
CPUs a third process, every part's result pickled across, and its memory counted once more.)
Workers are forked and fed over pipes (tunegate.dataset.forked_pool) where this process may fork;
elsewhere concurrent.futures spawns them.
`TUNEGATE_WORKERS` sets the number of processes (1 reads every file in this process); by default
it is the CPUs this process may use, up to 8, less those other processes keep busy (`busy_cpus`):
on a loaded machine a second process gains no time, yet costs CPU (the hand-over, the merge, caches
shared with the other load), so the gate pays once.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from tunegate.dataset.forked_pool import ForkedPool

WORKERS_ENV = "TUNEGATE_WORKERS"
MOST = 8  # beyond this the in-order merge in the parent becomes the limit
LOADAVG = "/proc/loadavg"  # "1-min 5-min 15-min running/total last-pid" on Linux


def worker_count() -> int:
    """How many processes to read with: TUNEGATE_WORKERS, else the usable CPUs that are idle (at most MOST)."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(usable - busy_cpus(), MOST))


def busy_cpus() -> int:
    """CPUs other processes keep busy: the fewer of the 1-minute load average (rounded; a fraction
    below 0.75 counts as idle) and the tasks running at this moment besides this one. Neither alone:
    the average lags (a command that just ended leaves a tail of load on an idle machine, as when
    checks run back to back) and a moment is noisy. 0 where the system does not say."""
    try:
        with open(LOADAVG, encoding="ascii") as f:
            fields = f.read().split()
        load, running = float(fields[0]), int(fields[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):  # no /proc: the average alone, where there is one
        try:
            load, running = os.getloadavg()[0], 1 << 30
        except (AttributeError, OSError):
            return 0
    return max(0, min(int(load + 0.25), running))


def _can_fork() -> bool:
    """fork on Linux when this process runs no thread but this one and the progress board's drawer
    (nothing to re-import, ~3 ms a worker): the board is held still while it forks and a worker
    never draws. Spawn otherwise: forking a process with other threads (a Prefect task's) can
    deadlock the child. (Counting the drawer as such a thread made every check in a terminal spawn
    its worker: +0.1 CPU s at 220 MB, and no second process below 64 MB.)"""
    if sys.platform != "linux":
        return False
    from tunegate import progress

    return set(threading.enumerate()) - {threading.current_thread()} <= progress.drawer_threads()


class Workers:
    """Processes that read the work's items, this one among them; results come back in the items' order."""

    def __init__(self, count: int):
        self.count = count  # processes that read: this one and count - 1 workers
        self._pool: ForkedPool | ProcessPoolExecutor | None = None
        # whether workers start by fork (cheap: tunegate.dataset.forked_pool) or spawn (each imports
        # tunegate anew, in concurrent.futures' pool)
        self.forks = _can_fork()
        # Items given to the workers: two each (the one it reads, the next), so a worker never waits
        # for this process, which takes the items after them itself. Not more: the results of the items
        # this process reads wait behind the workers' (with five a worker it ran ahead until the cap
        # below left it waiting for the workers' every item).
        self.ahead = 2 * max(1, count - 1)
        # Results that may wait to be yielded: a few items a process.
        self.window = 2 * count + 1

    @classmethod
    def start(cls, count: int) -> Workers:
        return cls(count)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None and self.forks:
            self._pool.shutdown()  # type: ignore[call-arg]
        elif self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def in_order(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """fn(item) for each item, yielded in the items' order: in the worker processes, and here
        whenever the next result to yield is not ready (this process would only wait for it).

        An item read here is a copy, as a worker gets it. Each worker is given two items at a time;
        this process reads the next item only while fewer than `window` results wait to be yielded.
        An exception of fn, wherever it ran, is raised at its item's turn (WorkerDied for a worker
        that ended without its result); the pool is started on first use.
        """
        if self._pool is None:  # imported here: a small file never needs a pool (pickle alone: ~3 ms)
            self.forks = self.forks and _can_fork()  # threads may have started since the plan was made
            self._pool = _forked(self.count - 1) if self.forks else _spawned(self.count - 1)
        pending: deque[Any] = deque()  # per item, in order: its future (a worker's) or its _Read (this process's)
        given = 0  # futures among them
        work = iter(items)

        def give() -> None:  # each worker kept one item ahead, so it never waits for this process
            nonlocal given
            while given < self.ahead and (item := next(work, _END)) is not _END:
                pending.append(self._pool.submit(fn, item))  # type: ignore[union-attr]
                given += 1

        give()
        while pending:
            while (type(pending[0]) is not _Read and not pending[0].done() and len(pending) < self.window
                   and (item := next(work, _END)) is not _END):  # this process would wait: it reads the next item
                pending.append(_Read.of(fn, item))
            done = pending.popleft()
            if type(done) is not _Read:
                given -= 1
            value = done.result() if self.forks else _spawned_result(done)
            give()
            yield value


def _forked(count: int) -> ForkedPool:
    from tunegate import progress
    from tunegate.dataset.forked_pool import ForkedPool

    return ForkedPool(max(1, count), held=progress.held_for_fork)


def _spawned(count: int) -> ProcessPoolExecutor:
    """Workers that start as fresh interpreters (concurrent.futures' pool, imported only here: ~10 ms)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=max(1, count), mp_context=multiprocessing.get_context("spawn"))
    _widen_result_pipe(pool)
    return pool


def _spawned_result(future: Any) -> Any:
    """A spawned worker's result; WorkerDied, as a forked pool says it, when its worker ended."""
    from concurrent.futures import BrokenExecutor

    from tunegate.errors import WorkerDied

    try:
        return future.result()
    except BrokenExecutor as exc:
        raise WorkerDied(str(exc)) from exc


def _widen_result_pipe(pool: Any) -> None:
    """The spawned pool's result pipe widened as a forked worker's is (forked_pool.widen_pipe).
    ProcessPoolExecutor keeps the pipe in a private attribute: where it has none, it stays as it is."""
    from tunegate.dataset.forked_pool import widen_pipe

    reader = getattr(getattr(pool, "_result_queue", None), "_reader", None)
    if reader is not None:
        widen_pipe(reader.fileno())


_END = object()


class _Read:
    """The result of an item this process read itself, waiting for its turn to be yielded; an
    exception is raised at that turn too, as a worker's is."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any, error: Exception | None = None):
        self.value, self.error = value, error

    @classmethod
    def of(cls, fn: Callable[[Any], Any], item: Any) -> _Read:
        try:
            return cls(fn(_as_sent(item)))
        except Exception as error:
            return cls(None, error)

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def _as_sent(item: Any) -> Any:
    """The item as a worker gets it: a copy, so what reading it changes stays out of this process's
    objects (a part's observers are templates, each part reads with its own)."""
    import pickle

    return pickle.loads(pickle.dumps(item, pickle.HIGHEST_PROTOCOL))
