"""Where `tunegate preflight` does its work: the mini-run in a child of the fork server, which
imported the training stack while the command imported Prefect and MLflow (issue 33)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow

PROBE = """
import sys
from tunegate.cli.main import main
code = main(["preflight", sys.argv[1], "--json"])
print("training stack in the command's process:", "torch" in sys.modules or "peft" in sys.modules, file=sys.stderr)
sys.exit(code)
"""


def test_the_mini_run_and_its_imports_are_the_fork_servers_child_and_the_verdict_is_the_same(tiny_cache, workdir):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}, "PYTHONPATH": str(ROOT),
           "PREFECT_HOME": str(workdir / "prefect-home")}
    run = subprocess.run([sys.executable, "-c", PROBE, str(workdir / "good.yaml")], cwd=workdir, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "training stack in the command's process: False" in run.stderr
    report = json.loads(run.stdout)
    assert report["approved_for_full_run"] is True
    mini = next(s for s in report["stages"] if s["name"] == "mini-run")
    assert mini["status"] == "passed" and report["facts"]["mini_run"]["final_loss"] > 0
