"""The calibration constants are what the fit rows give, and the split never moves a row."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

from tests.support.paths import ROOT
from tunegate.estimate import calibration

CSV = ROOT / "benchmarks" / "data" / "published_memory.csv"


def test_the_constants_in_calibration_py_are_what_the_fit_rows_give():
    done = subprocess.run([sys.executable, "benchmarks/estimate_accuracy.py", "--fit"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fitted = json.loads(done.stdout)
    assert fitted["COMPILE_ACTIVATIONS"] == calibration.COMPILE_ACTIVATIONS
    assert (fitted["BAND_LOW"], fitted["BAND_HIGH"]) == (calibration.BAND_LOW, calibration.BAND_HIGH)


def test_a_third_of_the_rows_is_held_out_by_a_hash_of_the_id_alone():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from estimate_accuracy import split_of

    rows = list(csv.DictReader(CSV.open(newline="")))
    held = [r["id"] for r in rows if split_of(r["id"]) == "holdout"]
    assert 0.2 < len(held) / len(rows) < 0.45
    assert "split" not in rows[0]  # the CSV cannot carry a hand-picked split
