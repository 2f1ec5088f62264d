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
def test_the_gpu_check_runs_the_mini_run_full_run_preflight_and_sweep_on_a_cpu_proxy(tiny_cache):
    report = run_script("benchmarks/gpu_check.py", "--device", "cpu", "--tiny", "--seq-len", "64", "--steps", "2")
    parts = report["parts"]
    assert report["proxy"]["layers"] == 2 and report["batch"]["seq_len"] == 64
    mini, full = parts["cli_mini_run"], parts["full_run"]
    assert (mini["status"], mini["exit_code"], mini["errors"]) == ("passed", 0, [])
    assert mini["measured"]["tokens_per_s"] > 0 and mini["measured"]["peak_gib"] > 0
    assert (full["status"], full["steps"], full["device"]) == ("completed", 2, "cpu")
    assert full["estimate"]["verdict"] == "fits" and full["estimate"]["tokens_per_s"] > 0
    assert mini["measured_over_estimate"] == {}  # a CPU's peak RSS and speed are not what the estimate models
    # what needs CUDA says so instead of claiming a figure
    assert parts["qlora_mini_run"]["status"].startswith("skipped")
    assert parts["ddp_full_run"]["status"].startswith("skipped")
    # the flow commands: the preflight's mini-run and a one-candidate sweep, forked from the fork server
    preflight, sweep = parts["preflight"], parts["sweep"]
    assert (preflight["status"], preflight["exit_code"], preflight["errors"]) == ("passed", 0, [])
    assert (sweep["exit_code"], sweep["approved"], sweep["errored"]) == (0, 1, 0)
    [candidate] = sweep["candidates"]
    assert candidate["val_loss"] > 0 and candidate["logged_memory"]["mini_run/peak_memory_gib"] > 0


@pytest.mark.slow
def test_the_overhead_benchmark_compares_checked_and_bare_loops(tiny_cache):
    report = run_script("benchmarks/minirun_overhead.py", "--reps", "1", "--steps", "2", "--json")
    assert report["loop"]["steps"] == 2 and report["loop"]["ratio"] > 0
    assert report["stage"]["total_s"] > 0
