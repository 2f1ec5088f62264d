"""`tunegate check SPEC --mini-run`: stages 0-4, with the verdict and exit code of the report."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.minirun import DATA
from tests.support.paths import ROOT


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)


def test_check_offers_the_mini_run_flag():
    done = tunegate("check", "--help")
    assert done.returncode == 0 and "--mini-run" in done.stdout


@pytest.mark.slow
def test_a_good_spec_is_approved_with_exit_code_0(tiny_cache):
    done = tunegate("check", str(DATA / "good.yaml"), "--mini-run", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["approved_for_full_run"]
    stage = next(s for s in report["stages"] if s["name"] == "mini-run")
    assert stage["status"] == "passed" and stage["stats"]["steps"] == 4


@pytest.mark.slow
def test_a_diverging_spec_is_rejected_with_exit_code_1(tiny_cache):
    done = tunegate("check", str(DATA / "lr_huge.yaml"), "--mini-run", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert not report["approved_for_full_run"]
    assert "TG516" in {f["code"] for f in report["findings"]}


def test_without_the_flag_the_mini_run_does_not_run():
    from tunegate.stage import GateContext
    from tunegate.stages import applicable

    assert "mini-run" not in applicable(GateContext(None, None, {}, cap=20))
    assert applicable(GateContext(None, None, {}, cap=20, mini_run=True))[-1] == "mini-run"


OOM_SCRIPT = r'''
import json, resource, sys
from tests.support.paths import ROOT
from pathlib import Path
import torch, transformers, peft  # imported before the cap: only the run's own allocations count
from tests.support.minirun import load_spec, run_stage
long = Path(sys.argv[1])
reply = " ".join(["support"] * 3000)  # ~3000 tokens per record
long.write_text("".join(json.dumps({"messages": [{"role": "user", "content": "Say it."},
                {"role": "assistant", "content": reply}]}) + "\n" for _ in range(16)))
spec = load_spec("good", **{"data.train": long, "training.micro_batch_size": 16, "training.max_seq_len": 4096,
                            "gate.mini_run.sample_size": 16, "training.precision": "fp32"})
run_stage(load_spec("good"))  # warm up every lazy import and allocator pool first
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + 400 * 2**20, resource.RLIM_INFINITY))  # 400 MiB more
result, _ = run_stage(spec)  # a 16 x 3000-token batch needs well over 400 MiB of activations
print(json.dumps([f.model_dump() for f in result.findings]))
'''


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmSize from /proc (Linux)")
def test_running_out_of_memory_is_a_finding_not_a_crash(tiny_cache, tmp_path):
    done = subprocess.run([sys.executable, "-c", OOM_SCRIPT, str(tmp_path / "long.jsonl")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    oom = [f for f in json.loads(done.stdout.splitlines()[-1]) if f["code"] == "TG509"]
    assert len(oom) == 1 and "out of memory" in oom[0]["message"]
    assert oom[0]["key"] == "training.micro_batch_size"
