"""Job slots: at most `size` candidates' jobs at once, handed out in the order asked, always given back."""
from __future__ import annotations

import threading
import time

import pytest

from tunegate.sweep import job_slots


def _hold_in_threads(count: int, hold_s: float, events: list) -> None:
    """`count` threads, started in order, each taking a slot, holding it `hold_s`, giving it back."""
    def one(i: int) -> None:
        with job_slots.job_slot() as slot:
            slot.take()
            events.append(("in", i))
            time.sleep(hold_s)
            events.append(("out", i))

    threads = []
    for i in range(count):
        threads.append(threading.Thread(target=one, args=(i,)))
        threads[-1].start()
        time.sleep(0.02)  # each asks after the one before it
    for thread in threads:
        thread.join(10)


def _taking_in_a_thread() -> tuple[threading.Event, threading.Thread]:
    """A candidate in a thread of its own taking a slot: the event is set once it has one."""
    taken = threading.Event()

    def candidate() -> None:
        with job_slots.job_slot() as slot:
            slot.take()
            taken.set()

    thread = threading.Thread(target=candidate)
    thread.start()
    return taken, thread


@pytest.mark.parametrize("size", [1, 2])
def test_no_more_than_size_jobs_hold_a_slot_at_once(size):
    events: list = []
    with job_slots.limited(size):
        _hold_in_threads(5, 0.1, events)
    inside, most = 0, 0
    for kind, _ in events:
        inside += 1 if kind == "in" else -1
        most = max(most, inside)
    assert most == size and len(events) == 10


def test_slots_go_to_candidates_in_the_order_they_asked():
    events: list = []
    with job_slots.limited(1):
        _hold_in_threads(4, 0.05, events)
    assert [i for kind, i in events if kind == "in"] == [0, 1, 2, 3]


def test_outside_a_limited_sweep_taking_a_slot_never_waits():
    events: list = []
    _hold_in_threads(3, 0.2, events)
    assert [kind for kind, _ in events[:3]] == ["in", "in", "in"]


def test_a_slot_is_given_back_when_the_candidate_fails_in_its_job():
    with job_slots.limited(1):
        with pytest.raises(RuntimeError), job_slots.job_slot() as slot:
            slot.take()
            raise RuntimeError("the candidate's job crashed")
        done, thread = _taking_in_a_thread()
        thread.join(5)
    assert done.is_set()


def test_a_candidate_that_never_took_its_slot_gives_nothing_back():
    with job_slots.limited(1):
        with job_slots.job_slot():  # rejected before its mini-run: no job, no slot
            pass
        with job_slots.job_slot() as first:
            first.take()
            taken, thread = _taking_in_a_thread()
            assert not taken.wait(0.2)  # the one slot is still the first's
        thread.join(5)
    assert taken.is_set()
