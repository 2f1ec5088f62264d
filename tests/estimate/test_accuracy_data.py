"""The accuracy benchmark's data: every published figure carries its source, and the script runs."""
from __future__ import annotations

import csv
import subprocess
import sys

from tests.support.paths import ROOT

CSV = ROOT / "benchmarks" / "data" / "published_memory.csv"


def test_every_published_figure_names_its_source_and_url():
    rows = list(csv.DictReader(CSV.open(newline="")))
    assert len(rows) >= 8
    for row in rows:
        assert row["source"] and row["url"].startswith("https://"), row["id"]
        assert row["measure"] in {"allocated", "reserved", "device"}
        assert row["confidence"] in {"high", "medium", "low"}


def test_the_benchmark_stays_within_15_percent_on_rows_with_confirmed_settings():
    done = subprocess.run([sys.executable, "benchmarks/estimate_accuracy.py", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import json
    result = json.loads(done.stdout)
    assert result["memory_mdape_high_confidence_pct"] <= 15.0
    assert result["memory_mdape_pct"] < result["memory_baseline_mdape_pct"]
