"""What a sweep imports ahead (tunegate.sweep.start_ahead), and what its charts need."""
from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT

PROBE = """
import sys
from tunegate.spec.check import parse_spec
from tunegate.sweep.start_ahead import start_imports_ahead
start_imports_ahead(parse_spec("examples/sweep.yaml")).join()
print("mlflow" in sys.modules, "matplotlib" in sys.modules)
from tunegate.charts.candidates import CandidateBar, val_loss_svg
from tunegate.charts.losses import losses_svg
val_loss_svg([CandidateBar("a", 1.0, True)], "t"), losses_svg({"a": [(1, 1.0)]}, "t")
print("matplotlib" in sys.modules)
"""


def test_the_tracking_modules_come_ahead_and_the_charts_import_no_plotting_library():
    # matplotlib's import took ~0.45 CPU s of every sweep's process (issue 33); the charts are SVG text.
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "False"]
