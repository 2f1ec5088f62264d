"""What a sweep imports ahead, and when (tunegate.sweep.start_ahead)."""
from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT

PROBE = """
import sys
from tunegate.spec.check import parse_spec
from tunegate.sweep.start_ahead import import_charts_ahead, start_imports_ahead
start_imports_ahead(parse_spec("examples/sweep.yaml")).join()
print("mlflow" in sys.modules, "matplotlib" in sys.modules)
import_charts_ahead().join()
print("matplotlib.figure" in sys.modules, "matplotlib.pyplot" in sys.modules)
"""


def test_the_chart_modules_wait_for_the_candidates_while_the_tracking_modules_come_first():
    # With the tracking modules they took ~0.4 s of the interpreter on the sweep's longest path.
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "True", "False"]
