"""numpy loads for the overlap passes with one OpenBLAS thread, and the user's environment is kept."""
from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, sys, threading
from tunegate.overlap.numeric import np
print(os.environ.get("OPENBLAS_NUM_THREADS"), threading.active_count(), len(os.listdir("/proc/self/task")))
"""


def probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_numpy_starts_no_blas_threads_and_the_setting_is_gone_after_the_import():
    setting, _, threads = probe()
    assert setting == "None"  # a trainer started later inherits the user's environment
    assert threads == "1"  # OpenBLAS started no thread pool of its own


def test_a_users_own_blas_setting_is_kept():
    setting, _, _ = probe(OPENBLAS_NUM_THREADS="2")
    assert setting == "2"
