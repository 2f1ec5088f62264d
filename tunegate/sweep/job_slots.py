"""At most `sweep.max_parallel` candidates' jobs at once, and each candidate's other work beside them.

    with job_slots.limited(max_parallel):           # the sweep flow, its candidates on threads
        ...                                         # each candidate, on a thread of its own:
    with job_slots.job_slot() as slot:              # tunegate.sweep.evaluate
        gate_candidate(..., before_mini_run=slot.take)   # waits here for a free slot
        ...its short training...
    # the slot is given back once its job has ended; its logging runs after that

A candidate's job is its mini-run and its short training: what uses the GPU, one candidate's at a
time per slot. The rest of its work is the sweep process's: its spec written and parsed, its
static stages (the estimate; its own data stages when its data differ), the frozen-validation
check, its MLflow run and Prefect artifact. The sweep evaluated candidates in batches of
max_parallel, each batch waiting for its slowest, and every candidate did that work before and
after its job, so the GPU (or the CPU a tiny model trains on) waited for it: on the 2-core machine
~0.2 s between two jobs of a 6-candidate sweep of the tiny model (issue 33), and a candidate on
data of its own waits for its whole data stages. On the flow's threads (twice max_parallel of them,
`tunegate.tasks.task_runners`) a candidate does that work while another's job runs, and takes a
slot, in the order candidates ask, just before its mini-run.

Outside `limited` (a Dask or Ray worker, a deployment's flow run, a test calling evaluate_candidate)
every slot is free: there the runner's own workers bound what runs at once.
"""
from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator


class _Slots:
    """`size` slots, handed out first come, first served."""

    def __init__(self, size: int):
        self.size, self.busy = size, 0
        self._turns: collections.deque[object] = collections.deque()
        self._changed = threading.Condition()

    def acquire(self) -> None:
        turn = object()
        with self._changed:
            self._turns.append(turn)
            while self._turns[0] is not turn or self.busy >= self.size:
                self._changed.wait()
            self._turns.popleft()
            self.busy += 1
            self._changed.notify_all()  # the next in line may find a slot free too

    def release(self) -> None:
        with self._changed:
            self.busy -= 1
            self._changed.notify_all()


class Slot:
    """One candidate's claim: `take` waits for a free slot (once); the slot goes back when its
    `job_slot` block ends."""

    def __init__(self, slots: _Slots | None):
        self._slots, self.taken = slots, False

    def take(self) -> None:
        if self._slots is not None and not self.taken:
            self._slots.acquire()
            self.taken = True

    def give_back(self) -> None:
        if self.taken:
            self.taken = False
            self._slots.release()


_LIMIT: _Slots | None = None


@contextlib.contextmanager
def limited(size: int) -> Iterator[None]:
    """Within it, candidates of this process run at most `size` jobs at once."""
    global _LIMIT
    earlier, _LIMIT = _LIMIT, _Slots(size)
    try:
        yield
    finally:
        _LIMIT = earlier


@contextlib.contextmanager
def job_slot() -> Iterator[Slot]:
    """A candidate's claim on a slot, given back (if it took one) however the block ends."""
    slot = Slot(_LIMIT)
    try:
        yield slot
    finally:
        slot.give_back()
