"""`skip_library_teardown`: a process's exit leaves torch's operator libraries registered (nothing
after it uses them) and still runs its other exit work."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import ROOT

# An operator library of our own, then the exit work a job's end runs (`atexit._run_exitfuncs`,
# before os._exit): prints whether the operator still runs afterwards, and whether a temporary
# folder's finalizer removed it.
EXIT_WORK = textwrap.dedent("""
    import atexit, os, sys, tempfile
    import torch
    from tunegate.processes.quick_exit import skip_library_teardown

    lib = torch.library.Library("tunegate_exit_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
    folder = tempfile.TemporaryDirectory()
    marked = skip_library_teardown() if sys.argv[1] == "skip" else 0
    atexit._run_exitfuncs()
    try:
        still = torch.ops.tunegate_exit_test.twice(torch.ones(1)).item() == 2.0
    except Exception:
        still = False
    print(marked, still, os.path.exists(folder.name))
    os._exit(0)
""")


def _exit_work(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", EXIT_WORK, mode], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_exit_work_leaves_the_operator_libraries_registered():
    marked, still, folder_left = _exit_work("skip")
    assert int(marked) > 1  # torch's own and ours
    assert still == "True"
    assert folder_left == "False"  # the temporary folder's finalizer still ran


def test_without_it_the_exit_work_takes_them_out():
    _, still, folder_left = _exit_work("plain")
    assert still == "False"
    assert folder_left == "False"
