"""Forked workers fed over pipes: results in the order given, failures raised here, nothing left behind."""
from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
import weakref
from pathlib import Path

import pytest

from tunegate.dataset.forked_pool import ForkedPool
from tunegate.errors import RemoteTraceback, WorkerDied

pytestmark = pytest.mark.skipif(sys.platform != "linux",
                                reason="the pool forks (tunegate.dataset.parallel spawns elsewhere)")


def _pid_of(item: int) -> tuple[int, int]:
    time.sleep(0.005)
    return item, os.getpid()


def _fails(item: int) -> int:
    if item == 2:
        raise ValueError("bad item 2")
    return item


def _unpicklable(item: int):
    return lambda: item  # a result pickle cannot carry


def _big(item: int) -> bytes:
    return bytes([item]) * (3 << 20)  # past the widest pipe: written in pieces as this process reads


def _dies(item: tuple[int, int]) -> int:
    time.sleep(0.2)  # after this process has begun to wait for it
    if os.getpid() == item[0]:
        os._exit(3)  # as a worker the kernel kills for memory
    return item[1]


def _timed_out(signum, frame):
    raise TimeoutError("waited for ever for a worker that had died")


def _sleeps(item: float) -> float:
    time.sleep(item)
    return item


def test_each_worker_answers_its_items_in_the_order_given_and_the_items_are_shared_out():
    pool = ForkedPool(2)
    try:
        sent = [pool.submit(_pid_of, n) for n in range(10)]
        got = [s.result() for s in sent]
    finally:
        pool.shutdown()
    assert [n for n, _ in got] == list(range(10))
    pids = {pid for _, pid in got}
    assert len(pids) == 2 and os.getpid() not in pids


def test_done_says_whether_a_result_is_here_without_waiting_for_it():
    pool = ForkedPool(1)
    try:
        slow = pool.submit(_sleeps, 0.3)
        started = time.perf_counter()
        assert not slow.done() and time.perf_counter() - started < 0.1
        time.sleep(0.5)
        assert slow.done() and slow.result() == 0.3
    finally:
        pool.shutdown()


def test_an_exception_in_a_worker_is_raised_here_with_the_workers_traceback():
    pool = ForkedPool(1)
    try:
        sent = [pool.submit(_fails, n) for n in range(4)]
        assert [sent[0].result(), sent[1].result()] == [0, 1]
        with pytest.raises(ValueError, match="bad item 2") as raised:
            sent[2].result()
        assert isinstance(raised.value.__cause__, RemoteTraceback) and "_fails" in str(raised.value.__cause__)
        assert sent[3].result() == 3  # the worker goes on with its next item
    finally:
        pool.shutdown()


def test_a_result_pickle_cannot_carry_is_an_error_here_not_a_hang():
    pool = ForkedPool(1)
    try:
        with pytest.raises(RuntimeError):
            pool.submit(_unpicklable, 1).result()
    finally:
        pool.shutdown()


def test_a_result_larger_than_the_pipe_arrives_whole():
    pool = ForkedPool(1)
    try:
        sent = [pool.submit(_big, n) for n in (1, 2)]
        assert [s.result() for s in sent] == [bytes([1]) * (3 << 20), bytes([2]) * (3 << 20)]
    finally:
        pool.shutdown()


def test_a_worker_that_dies_while_this_process_waits_for_its_result_is_raised_not_waited_for():
    pool = ForkedPool(2)
    before = signal.signal(signal.SIGALRM, _timed_out)
    try:
        first = pool._workers[0].pid
        sent = pool.submit(_dies, (first, 0))
        assert sent._worker.pid == first
        signal.alarm(5)
        with pytest.raises(WorkerDied):
            sent.result()
        with pytest.raises(WorkerDied):
            pool.submit(_dies, (first, 1))  # a pool missing a worker takes no more items
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
        pool.shutdown()


def test_shutting_down_ends_a_worker_blocked_on_a_result_nobody_reads():
    pool = ForkedPool(1)
    pool.submit(_big, 1)  # never read: the worker blocks on the full pipe
    time.sleep(0.2)
    pid = pool._workers[0].pid
    started = time.perf_counter()
    pool.shutdown()
    assert time.perf_counter() - started < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # collected: no zombie left


def test_a_worker_runs_none_of_this_processes_exit_work():
    folder = tempfile.mkdtemp()
    holder = type("Holder", (), {})()
    weakref.finalize(holder, os.rmdir, folder)  # as the shared index's removal at the end of a check
    pool = ForkedPool(1)
    try:
        assert pool.submit(_pid_of, 1).result()[0] == 1
    finally:
        pool.shutdown()
    assert Path(folder).is_dir()  # the worker ended without removing it
    del holder
    assert not Path(folder).exists()


def _collects(item: int) -> int:
    import gc

    gc.collect()  # as a worker's own collection, whenever it comes
    return item


def test_garbage_this_process_left_uncollected_is_not_collected_by_a_worker():
    import gc

    folder = tempfile.mkdtemp()
    cycle = type("Cycle", (), {})()
    cycle.me = cycle
    weakref.finalize(cycle, os.rmdir, folder)
    gc.disable()  # the cycle is garbage here, not yet collected, when the worker forks
    try:
        del cycle
        pool = ForkedPool(1)
        try:
            assert pool.submit(_collects, 1).result() == 1
        finally:
            pool.shutdown()
        assert Path(folder).is_dir()  # the parent's finalizer did not run in the worker
    finally:
        gc.enable()
        gc.collect()
    assert not Path(folder).exists()


def test_a_worker_ends_when_this_process_is_killed():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a gate process with one worker, killed before it shuts its pool down
        try:
            pool = ForkedPool(1)
            os.write(write, str(pool._workers[0].pid).encode())
            time.sleep(30)
        finally:
            os._exit(0)
    os.close(write)
    worker = int(os.read(read, 64))
    os.close(read)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    for _ in range(100):  # the worker sees its pipe of items end, and exits
        if not _running(worker):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the worker outlived the process that forked it")


def _running(pid: int) -> bool:
    """Whether the process runs (an exited one nobody has collected yet is a zombie: not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_pipes_past_descriptor_1023_are_waited_on_as_any_other():
    # a long-lived process (a Prefect worker) may hold a thousand descriptors: select() refuses past 1023
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("this system allows fewer than 1200 open descriptors")
    wanted = max(soft, 1200) if hard == resource.RLIM_INFINITY else min(max(soft, 1200), hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    held = [os.dup(0) for _ in range(1100)]
    try:
        pool = ForkedPool(1)
        try:
            assert pool._workers[0].results > 1023
            slow = pool.submit(_sleeps, 0.2)  # waited for: the wait must take the descriptor
            assert slow.result() == 0.2
        finally:
            pool.shutdown()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
