"""A followed child process is stopped when the command is cut short, and its follower says so."""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from tunegate.errors import TrainingStopped
from tunegate.processes.followed import followed, following_again, stop_followed, stop_group, stopped_if_cut_short

# A child in a session of its own, as a launched training is, printing a line a second.
TICKING = "import sys, time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(1)\n"
IGNORING_SIGTERM = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(60)\n"


def start(code: str = TICKING) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)


def follow_in_thread(proc: subprocess.Popen) -> tuple[threading.Thread, list[BaseException]]:
    raised: list[BaseException] = []

    def read() -> None:
        try:
            with followed(proc):
                for _ in proc.stdout:
                    pass
                proc.wait()
        except BaseException as exc:  # noqa: BLE001 - what the follower raised is the test's subject
            raised.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    return thread, raised


@pytest.fixture(autouse=True)
def _following_again():
    yield
    following_again()


def test_an_exception_in_the_block_stops_the_process_it_follows():
    proc = start()
    with pytest.raises(KeyboardInterrupt), followed(proc):
        proc.stdout.readline()
        raise KeyboardInterrupt  # the main thread's Ctrl-C while it reads the output
    assert proc.poll() is not None


def test_a_cut_short_block_stops_what_a_worker_thread_follows_and_the_worker_raises_training_stopped():
    proc = start()
    thread, raised = follow_in_thread(proc)
    with pytest.raises(KeyboardInterrupt), stopped_if_cut_short():
        time.sleep(0.5)  # followed by then; if not, it is followed late, and stopped at once all the same
        raise KeyboardInterrupt
    thread.join(30)
    assert not thread.is_alive() and proc.poll() is not None
    assert len(raised) == 1 and isinstance(raised[0], TrainingStopped)


def test_a_block_that_ends_well_stops_nothing():
    proc = start()
    thread, raised = follow_in_thread(proc)
    with stopped_if_cut_short():
        time.sleep(0.3)
    assert proc.poll() is None
    stop_group(proc)
    thread.join(30)
    assert raised == [] and proc.poll() is not None  # stopped by its own follower's caller, not the cut


def test_after_a_cut_a_process_followed_late_is_stopped_at_once_until_following_again():
    stop_followed()
    late = start()
    thread, raised = follow_in_thread(late)
    thread.join(30)
    assert late.poll() is not None and isinstance(raised[0], TrainingStopped)
    following_again()
    later = start()
    thread, raised = follow_in_thread(later)
    time.sleep(0.5)
    assert later.poll() is None
    stop_group(later)
    thread.join(30)
    assert raised == []


def test_stop_group_kills_what_ignores_sigterm_after_the_grace():
    proc = start(IGNORING_SIGTERM)
    proc.stdout.readline()  # its handler is set
    started = time.monotonic()
    stop_group(proc, grace_s=0.5)
    assert proc.wait(10) == -9 and time.monotonic() - started < 5
