"""A mini-run in a fresh process of its own (`python -m tunegate.sweep.mini_run_apart ARGS.json`), as a
candidate's that will use a GPU runs on a Dask or Ray worker: a process of tunegate's own."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.minirun import DATA
from tunegate.facts import GateFacts
from tunegate.report import GateReport
from tunegate.spec.check import parse_spec

AS_MAIN_COUNTED = """
import gc, json, runpy, sys
during_stack = []  # collections that ran once torch began to import, before anything was frozen
gc.callbacks.append(lambda phase, info: phase == "start" and "torch" in sys.modules and gc.get_freeze_count() == 0
                    and during_stack.append(info["generation"]))
sys.argv = ["mini_run_apart", sys.argv[1]]
try:
    runpy.run_module("tunegate.sweep.mini_run_apart", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    print(json.dumps({"code": exit.code, "during_stack": during_stack, "frozen": gc.get_freeze_count(),
                      "enabled": gc.isenabled()}))
"""


@pytest.mark.slow  # the training stack imported in a fresh interpreter (~3 s)
def test_the_mini_run_imports_its_stack_with_the_collector_off_then_freezes_it(tmp_path):
    # A base that cannot be loaded: the stage imports its whole stack, then stops at the model.
    spec = tmp_path / "spec.yaml"
    spec.write_text((DATA / "good.yaml").read_text().replace("tunegate/tiny-llama", str(tmp_path / "no-such-model")))
    report_path, args = tmp_path / "report.json", tmp_path / "args.json"
    args.write_text(json.dumps({"parsed": parse_spec(spec).model_dump_json(), "facts": GateFacts().model_dump_json(),
                                "report": str(report_path)}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", AS_MAIN_COUNTED, str(args)], capture_output=True, text=True,
                          timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    stage = GateReport.model_validate_json(report_path.read_text(encoding="utf-8")).stage("mini-run")
    assert got["code"] == 0 and stage.status == "failed"
    assert any("no-such-model" in f.message for f in stage.findings)
    assert got["during_stack"] == [] and got["frozen"] > 100_000 and got["enabled"]
