"""Collections held while a process of ours imports (tunegate.processes.held_collections).

Each case runs in a fresh interpreter: marking a process as our own, and freezing its objects,
lasts as long as the process, and the test runner's must never be frozen."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import ROOT


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_in_our_own_process_no_collection_runs_while_a_block_holds_and_what_it_made_is_frozen_after():
    out = _run("""
        import gc
        from tunegate.processes.held_collections import collections_held, own_process
        own_process()
        passes = []
        gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))
        with collections_held():
            inside = gc.isenabled()
            kept = [[i] for i in range(200_000)]  # as an import's objects: far past every threshold
        print(inside, passes, gc.isenabled(), gc.get_freeze_count() >= 200_000)
    """)
    assert out == "False [] True True"


def test_collection_resumes_only_when_the_last_of_two_threads_holding_lets_go():
    out = _run("""
        import gc, threading
        from tunegate.processes.held_collections import collections_held, own_process
        own_process()
        entered, release = threading.Event(), threading.Event()
        def other():
            with collections_held():
                entered.set()
                release.wait()
        thread = threading.Thread(target=other)
        thread.start()
        entered.wait()
        with collections_held():
            pass
        after_first = gc.isenabled()
        release.set()
        thread.join()
        print(after_first, gc.isenabled())
    """)
    assert out == "False True"


def test_a_process_that_is_not_our_own_is_left_as_it_is():
    out = _run("""
        import gc
        from tunegate.processes.held_collections import collections_held
        frozen = gc.get_freeze_count()
        with collections_held():
            inside = gc.isenabled()
            kept = [[i] for i in range(1000)]
        print(inside, gc.get_freeze_count() == frozen)
    """)
    assert out == "True True"


def test_collection_that_was_off_before_the_block_stays_off_after_it():
    out = _run("""
        import gc
        from tunegate.processes.held_collections import collections_held, own_process
        own_process()
        gc.disable()  # as a static command's start-up holds it (tunegate.cli.start_up)
        with collections_held():
            pass
        print(gc.isenabled())
    """)
    assert out == "False"


def test_a_block_that_raises_still_lets_go():
    out = _run("""
        import gc
        from tunegate.processes.held_collections import collections_held, own_process
        own_process()
        try:
            with collections_held():
                raise ValueError("the spec cannot be read")
        except ValueError:
            pass
        print(gc.isenabled())
    """)
    assert out == "True"


def test_a_paused_block_runs_no_collection_freezes_nothing_and_resumes_in_any_process():
    out = _run("""
        import gc
        from tunegate.processes.held_collections import collections_paused
        passes = []
        gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))
        frozen = gc.get_freeze_count()
        with collections_paused():  # a process not marked our own: paused all the same
            inside = gc.isenabled()
            rows = [[i] for i in range(200_000)]
            during = list(passes)  # collections may run again once the block has ended
        print(inside, during, gc.isenabled(), gc.get_freeze_count() == frozen)
    """)
    assert out == "False [] True True"
