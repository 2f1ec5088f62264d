"""Job slots: at most `size` candidates' jobs at once, in the sweep's order whatever order their
threads come in, and every turn and slot passed on however a candidate ends."""
from __future__ import annotations

import threading
import time

import pytest

from tunegate.sweep import job_slots

JOIN_S = 10


def _candidate(key: str, events: list, hold_s: float, lock: threading.Lock, needs_job: bool = True) -> None:
    """As tunegate.sweep.evaluate: its turn, the sweep's mini-run lock, a slot for its job, the job."""
    with job_slots.claim(key) as claim:
        with claim.turn(), lock:
            if needs_job:
                claim.take_slot()
                events.append(("in", key))
        if needs_job:
            time.sleep(hold_s)  # its short training, outside the lock
            events.append(("out", key))


def _run(keys_in_thread_order: list[str], events: list, hold_s: float = 0.05, stagger_s: float = 0.02,
         no_job: tuple[str, ...] = ()) -> list[threading.Thread]:
    lock = threading.Lock()
    threads = []
    for key in keys_in_thread_order:
        threads.append(threading.Thread(target=_candidate, args=(key, events, hold_s, lock, key not in no_job)))
        threads[-1].start()
        time.sleep(stagger_s)
    for thread in threads:
        thread.join(JOIN_S)
    return threads


@pytest.mark.parametrize("size", [1, 2])
def test_no_more_than_size_jobs_hold_a_slot_at_once(size):
    events: list = []
    keys = [f"c{i}" for i in range(5)]
    with job_slots.limited(size, keys):
        _run(keys, events, hold_s=0.1)
    inside, most = 0, 0
    for kind, _ in events:
        inside += 1 if kind == "in" else -1
        most = max(most, inside)
    assert most == size and len(events) == 10


def test_jobs_start_in_the_sweeps_order_though_the_threads_come_in_another():
    events: list = []
    with job_slots.limited(1, ["a", "b", "c", "d"]):
        threads = _run(["d", "b", "c", "a"], events)  # the last candidate's thread first, holding the lock
    assert not any(thread.is_alive() for thread in threads)
    assert [key for kind, key in events if kind == "in"] == ["a", "b", "c", "d"]


def test_a_candidate_that_needs_no_job_passes_its_turn():
    events: list = []
    with job_slots.limited(1, ["a", "b", "c"]):
        threads = _run(["c", "b", "a"], events, no_job=("b",))  # b: its spec rejected, or its run found
    assert not any(thread.is_alive() for thread in threads)
    assert [key for kind, key in events if kind == "in"] == ["a", "c"]


def test_a_candidate_whose_task_never_ran_holds_no_one_up():
    events: list = []
    with job_slots.limited(1, ["a", "b", "c"]):
        job_slots.ended("a")(None)  # Prefect failed a's task before our code ran: its future's callback
        threads = _run(["c", "b"], events)
    assert not any(thread.is_alive() for thread in threads)
    assert [key for kind, key in events if kind == "in"] == ["b", "c"]


def test_a_task_that_ended_after_its_claim_takes_no_other_candidates_turn():
    events: list = []
    with job_slots.limited(1, ["a", "a", "b"]):  # two candidates with one key: interchangeable
        _run(["a"], events)
        job_slots.ended("a")(None)  # the first a's future, after its claim passed its turn
        late = threading.Thread(target=_run, args=(["b"], events))
        late.start()
        late.join(0.3)
        assert late.is_alive()  # b waits for the second a, which has not come yet
        _run(["a"], events)
        late.join(JOIN_S)
    assert [key for kind, key in events if kind == "in"] == ["a", "a", "b"]


def test_a_slot_and_a_turn_are_passed_on_when_the_candidate_fails_in_its_job():
    events: list = []
    with job_slots.limited(1, ["a", "b"]):
        with pytest.raises(RuntimeError), job_slots.claim("a") as claim:
            with claim.turn():
                claim.take_slot()
            raise RuntimeError("the candidate's job crashed")
        threads = _run(["b"], events)
    assert not any(thread.is_alive() for thread in threads) and events[0] == ("in", "b")


def test_outside_a_limited_sweep_nothing_waits():
    events: list = []
    _run(["c", "b", "a"], events, hold_s=0.3, stagger_s=0.0)
    assert [kind for kind, _ in events[:3]] == ["in", "in", "in"]
