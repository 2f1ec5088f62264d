"""At most `sweep.max_parallel` candidates' jobs at once, started in the sweep's order, and each
candidate's other work beside them.

    with job_slots.limited(max_parallel, keys):      # the sweep flow: its candidates' keys, in order
        future.add_done_callback(job_slots.ended(key))   # each candidate's task, however it ends
    with job_slots.claim(key) as claim:             # tunegate.sweep.evaluate, on the candidate's thread
        with claim.turn():                          # candidates pass here one at a time, in the sweep's order
            gate_candidate(..., before_mini_run=claim.take_slot)   # waits for a free slot
        ...its short training...
    # its slot is given back once its job has ended; its logging runs after that

A candidate's job is its mini-run and its short training: what uses the GPU, one candidate's at a
time per slot. The rest of its work is the sweep process's: its spec written and parsed, its
earlier run looked up, its static stages (the estimate; its own data stages when its data differ),
the frozen-validation check, its MLflow run and Prefect artifact. In batches of max_parallel, each
batch waited for its slowest, and every candidate did that work before and after its job while the
GPU (or the CPU a tiny model trains on) waited: ~0.2 s between two jobs of a 6-candidate sweep of
the tiny model on the 2-core machine (issue 33), a candidate's whole data stages where its data
differ. On the flow's threads (twice max_parallel, `tunegate.tasks.task_runners`) a candidate
does that work while another's job runs.

The order matters: the pruning rules judge a candidate against those that reached a step before
it, and a rerun must judge the same way. So candidates pass their gate one at a time in the
sweep's order (`turn`), and take their slot inside it: jobs start in the sweep's order as they did
in batches. A candidate that needs no turn (its run was found, its spec rejected, a crash of ours)
passes it as its claim ends; a task that never ran our code at all (Prefect failed it first)
passes it through its future's done-callback (`ended`), so no later candidate waits for it.

Outside `limited` (a Dask or Ray worker, a deployment's flow run, NOMAD's batches, a test calling
evaluate_candidate) nothing waits: there the runner's own workers bound what runs at once.
"""
from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class _Slots:
    """`size` job slots and the candidates' turns, in the order of `keys`."""

    def __init__(self, size: int, keys: list[str]):
        self.size, self.busy = size, 0
        self._waiting = list(keys)  # one entry per candidate that has not passed its turn
        self._claims_passed: collections.Counter[str] = collections.Counter()
        self._changed = threading.Condition()

    def wait_turn(self, key: str) -> None:
        with self._changed:
            while key in self._waiting and self._waiting[0] != key:
                self._changed.wait()

    def pass_turn(self, key: str) -> None:
        """A claim's end: its candidate's entry leaves the queue (once)."""
        with self._changed:
            self._drop(key)
            self._claims_passed[key] += 1

    def task_ended(self, key: str) -> None:
        """A candidate's task ended: its entry leaves the queue unless its claim took it out already
        (two candidates with one key are interchangeable, so counting by key is enough)."""
        with self._changed:
            if self._claims_passed[key] > 0:
                self._claims_passed[key] -= 1
            else:
                self._drop(key)

    def _drop(self, key: str) -> None:
        if key in self._waiting:
            self._waiting.remove(key)
        self._changed.notify_all()

    def acquire(self) -> None:
        with self._changed:
            while self.busy >= self.size:
                self._changed.wait()
            self.busy += 1

    def release(self) -> None:
        with self._changed:
            self.busy -= 1
            self._changed.notify_all()


class Claim:
    """One candidate's turn and slot in a limited sweep (no waiting anywhere else)."""

    def __init__(self, slots: _Slots | None, key: str):
        self._slots, self._key = slots, key
        self.slot_taken = self._passed = False

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for the candidates before this one to pass theirs; pass it when the block ends."""
        if self._slots is not None:
            self._slots.wait_turn(self._key)
        try:
            yield
        finally:
            self._pass()

    def take_slot(self) -> None:
        """Wait for a free job slot (once); it is given back when the claim ends."""
        if self._slots is not None and not self.slot_taken:
            self._slots.acquire()
            self.slot_taken = True

    def _pass(self) -> None:
        if self._slots is not None and not self._passed:
            self._passed = True
            self._slots.pass_turn(self._key)

    def end(self) -> None:
        self._pass()
        if self.slot_taken:
            self.slot_taken = False
            self._slots.release()


_LIMIT: _Slots | None = None


@contextlib.contextmanager
def limited(size: int, keys: list[str]) -> Iterator[None]:
    """Within it, this process's candidates run at most `size` jobs at once, in the order of `keys`
    (each candidate's `tunegate.sweep.candidates.candidate_key`)."""
    global _LIMIT
    earlier, _LIMIT = _LIMIT, _Slots(size, keys)
    try:
        yield
    finally:
        _LIMIT = earlier


def ended(key: str) -> Callable[[Any], None]:
    """A done-callback for the future of candidate `key`'s task: its turn passes however it ended."""
    slots = _LIMIT
    return lambda _future: slots.task_ended(key) if slots is not None else None


@contextlib.contextmanager
def claim(key: str) -> Iterator[Claim]:
    """Candidate `key`'s claim: its turn passed and its slot given back however the block ends."""
    held = Claim(_LIMIT, key)
    try:
        yield held
    finally:
        held.end()
