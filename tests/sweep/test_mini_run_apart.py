"""A mini-run in a fresh process of its own (`python -m tunegate.sweep.mini_run_apart ARGS.json`), as a
candidate's that will use a GPU runs on a Dask or Ray worker: a process of tunegate's own."""
from __future__ import annotations

import json

import pytest

from tests.support.collections_counted import run_as_main
from tests.support.minirun import DATA
from tunegate.facts import GateFacts
from tunegate.report import GateReport
from tunegate.spec.check import parse_spec


@pytest.mark.slow  # the training stack imported in a fresh interpreter (~3 s)
def test_the_mini_run_imports_its_stack_with_the_collector_off_then_freezes_it(tmp_path):
    # A base that cannot be loaded: the stage imports its whole stack, then stops at the model.
    spec = tmp_path / "spec.yaml"
    spec.write_text((DATA / "good.yaml").read_text().replace("tunegate/tiny-llama", str(tmp_path / "no-such-model")))
    report_path, args = tmp_path / "report.json", tmp_path / "args.json"
    args.write_text(json.dumps({"parsed": parse_spec(spec).model_dump_json(), "facts": GateFacts().model_dump_json(),
                                "report": str(report_path)}), encoding="utf-8")
    got = run_as_main("tunegate.sweep.mini_run_apart", [str(args)])
    stage = GateReport.model_validate_json(report_path.read_text(encoding="utf-8")).stage("mini-run")
    assert got["code"] == 0 and stage.status == "failed"
    assert any("no-such-model" in f.message for f in stage.findings)
    assert got["during_stack"] == [] and got["frozen"] > 100_000 and got["enabled"]
