"""A child started with `on_parent_death` ends when the process that started it is killed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.support.paths import ROOT
from tests.support.processes import gone
from tunegate.processes import on_parent_death

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux parent-death signal")

# The parent starts a long sleeper with the signal set, prints its pid, then waits to be killed.
PARENT = textwrap.dedent("""
    import signal, subprocess, sys, time
    from tunegate.processes import on_parent_death
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             preexec_fn=on_parent_death(signal.SIGTERM))
    print(child.pid, flush=True)
    time.sleep(600)
""")


def start_parent() -> tuple[subprocess.Popen, int]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    return parent, int(parent.stdout.readline())


@linux
def test_a_child_ends_when_its_parent_is_killed_with_sigkill():
    parent, child = start_parent()
    try:
        assert not gone(child, within_s=0.5)  # it runs while its parent does
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        assert gone(child)
    finally:
        for pid in (parent.pid, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# A process made by a child of the one that asked (its parent is not that one, as for a child
# whose parent died before it ran) exits in set_up; a direct child goes on.
ORPHAN = textwrap.dedent("""
    import os, signal, sys
    from tunegate.processes import on_parent_death
    set_up, marker = on_parent_death(signal.SIGTERM), sys.argv[1]
    if os.fork() == 0:
        grandchild = os.fork()
        if grandchild == 0:
            set_up()
            open(marker + ".grandchild", "w").close()
            os._exit(0)
        os._exit(os.waitstatus_to_exitcode(os.waitpid(grandchild, 0)[1]))
    _, status = os.wait()
    print(os.waitstatus_to_exitcode(status))
    if os.fork() == 0:
        set_up()
        open(marker + ".child", "w").close()
        os._exit(0)
    os.wait()
""")


@linux
def test_a_process_whose_parent_is_not_the_one_that_asked_exits_at_once(tmp_path):
    marker = tmp_path / "ran"
    run = subprocess.run([sys.executable, "-c", ORPHAN, str(marker)], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60, check=True)
    assert run.stdout.split() == ["1"]  # the grandchild's exit code: set_up ended it
    assert not (tmp_path / "ran.grandchild").exists()
    assert (tmp_path / "ran.child").exists()


def test_elsewhere_than_linux_no_preexec_fn_is_given(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert on_parent_death(signal.SIGTERM) is None
