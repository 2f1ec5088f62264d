"""Worker processes for reading a file in parts, results handed back in order.

    with Workers.start(2) as pool:
        for result in pool.in_order(read_part, parts):
            ...

Processes, not threads: the per-record work is Python code and would hold the GIL. The pool is
started once per gate run and serves every file; at most `2 x count + 1` parts are in flight, so the
results waiting to be merged stay bounded whatever the file's size. `TUNEGATE_WORKERS` sets the
number of processes (1 reads every file in this process); by default it is the CPUs this process
may use, up to 8, less those other processes keep busy (`busy_cpus`): on a loaded
machine a second worker gains no time, yet costs CPU (the hand-over, the merge, caches shared with
the other load), so the gate pays once.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

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
    """fork when this process runs one thread on Linux (nothing to re-import, ~10 ms a worker);
    spawn otherwise: forking a process with other threads (a Prefect task's) can deadlock the child."""
    return sys.platform == "linux" and threading.active_count() == 1


class Workers:
    """A process pool that returns results in the order the work was given."""

    def __init__(self, count: int):
        self.count = count
        self._pool: ProcessPoolExecutor | None = None
        self.forks = _can_fork()  # whether workers start by fork (cheap) or spawn (each imports tunegate anew)
        # Parts in flight: two a worker, so one slow part does not leave the other workers idle
        # while the results behind it wait to be merged in order.
        self.window = 2 * count + 1

    @classmethod
    def start(cls, count: int) -> Workers:
        return cls(count)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def in_order(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """fn(item) for each item in worker processes, yielded in the items' order.

        A worker's exception is raised here; the pool is started on first use.
        """
        if self._pool is None:  # imported here: a small file never needs the pool's ~60 ms of imports
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork" if self.forks else "spawn")
            self._pool = ProcessPoolExecutor(max_workers=self.count, mp_context=context)
        pending: deque[Future] = deque()
        work = iter(items)
        for item in work:
            pending.append(self._pool.submit(fn, item))
            if len(pending) >= self.window:
                break
        while pending:
            done = pending.popleft().result()
            nxt = next(work, None)
            if nxt is not None:
                pending.append(self._pool.submit(fn, nxt))
            yield done
