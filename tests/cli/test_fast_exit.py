"""A static command's process ends after its exit handlers, without the interpreter's teardown."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import ROOT


def run_as(argv0: str, body: str) -> subprocess.CompletedProcess:
    script = textwrap.dedent(f"""
        import atexit, sys, threading, time
        sys.argv[0] = {argv0!r}
        from tunegate.cli.fast_exit import end_now
        atexit.register(lambda: print("handler ran", flush=True))
        print("report", end="")  # unflushed: ending the process must not lose it
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_the_command_ends_with_its_code_after_every_exit_handler_and_its_output():
    done = run_as("tunegate", "end_now(3)\nprint('after end_now')\n")
    assert done.returncode == 3
    assert done.stdout == "reporthandler ran\n"


def test_a_library_caller_keeps_its_own_exit():
    done = run_as("pytest", "end_now(3)\nprint(' after end_now')\n")
    assert done.returncode == 0
    assert done.stdout == "report after end_now\nhandler ran\n"


def test_the_command_ends_as_usual_while_another_thread_runs():
    for daemon in (False, True):  # a daemon thread's exit hooks (threading's) would be skipped too
        done = run_as("tunegate", f"t = threading.Thread(target=time.sleep, args=(0.2,), daemon={daemon})\n"
                                  "t.start()\nend_now(3)\nprint(' not ended')\n")
        assert done.returncode == 0
        assert done.stdout == "report not ended\nhandler ran\n"
