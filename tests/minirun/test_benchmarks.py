"""The mini-run benchmark scripts still run (smoke runs on the CPU; their figures are not asserted)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


def run_script(*args: str) -> dict:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_gpu_check_runs_the_real_stage_on_a_cpu_proxy(tiny_cache):
    report = run_script("benchmarks/gpu_minirun_check.py", "--device", "cpu", "--tiny", "--seq-len", "64")
    assert report["status"] == "passed"
    assert report["proxy"]["layers"] == 2 and report["batch"]["seq_len"] == 64
    assert report["tokens_per_s"] > 0 and report["train_peak_memory_bytes"] > 0
    assert report["reload_max_logit_diff"] == 0.0


@pytest.mark.slow
def test_the_overhead_benchmark_compares_checked_and_bare_loops(tiny_cache):
    report = run_script("benchmarks/minirun_overhead.py", "--reps", "1", "--steps", "2", "--json")
    assert report["loop"]["steps"] == 2 and report["loop"]["ratio"] > 0
    assert report["stage"]["total_s"] > 0
