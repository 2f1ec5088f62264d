"""The stage table: one row per gate stage, read by the gate, the report, the tasks and the sweep.

A new stage is a folder with a front door and one row: the last test adds one to a copy of the
package and finds it in the report, in its place, with nothing else changed.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import DATA, EXAMPLES, ROOT
from tunegate import stages
from tunegate.report import REQUIRED_GATES, GateReport, StageResult
from tunegate.stage import GateContext

QUICKSTART = EXAMPLES / "quickstart.yaml"
SHAREGPT = DATA / "formats" / "good" / "sharegpt.jsonl"
HEAVY = ("torch", "transformers", "peft", "prefect", "mlflow", "openai")


def imported_after(code: str, pythonpath: Path = ROOT) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", probe], cwd=pythonpath, capture_output=True, text=True,
                         timeout=120, check=True, env={**os.environ, "PYTHONPATH": str(pythonpath)})
    return set(json.loads(run.stdout.splitlines()[-1]))


def test_the_table_lists_the_stages_in_the_order_the_gate_runs_them():
    assert stages.names() == ["spec", "dataset", "overlap", "estimate", "mini-run", "advisor"]


def test_a_report_lists_its_stages_in_the_table_order(monkeypatch):
    from tunegate.gate import check

    monkeypatch.delenv("OXLO_API_KEY", raising=False)  # the advisor's rules, never the network
    report = check(QUICKSTART, advisor=True)
    assert [s.name for s in report.stages] == [n for n in stages.names() if n != "mini-run"]


def test_the_required_gates_are_exactly_what_an_approval_needs():
    assert REQUIRED_GATES == stages.required() == ("spec", "dataset", "overlap", "estimate", "mini-run")
    every = [StageResult(name=n, status="passed") for n in stages.names()]
    assert GateReport.from_stages(every).approved_for_full_run
    for gate in stages.required():
        report = GateReport.from_stages([s for s in every if s.name != gate])
        assert report.gates_passed and not report.approved_for_full_run
        assert report.not_run == {gate: "not run"}


def test_the_advisor_is_optional_an_approval_does_not_wait_for_it():
    report = GateReport.from_stages([StageResult(name=n, status="passed") for n in stages.names() if n != "advisor"])
    assert report.approved_for_full_run and report.not_run == {}


@pytest.mark.parametrize("row", stages.STAGES, ids=lambda r: r.name)
def test_each_row_front_door_exists_and_defines_its_entry(row):
    assert (ROOT / "tunegate" / row.folder / f"{row.door}.py").is_file()
    assert callable(getattr(importlib.import_module(row.front_door), row.entry))
    assert row.entry == ("parse_spec" if row.name == "spec" else "run_stage")


def test_front_door_names_the_module_the_gate_imports():
    assert stages.front_door("mini-run") == "tunegate.minirun.stage"
    assert stages.front_door("spec") == "tunegate.spec.check"
    with pytest.raises(KeyError, match="no gate stage is called 'lint'"):
        stages.front_door("lint")


def test_the_static_stages_run_without_torch_and_are_what_the_static_task_runs():
    assert stages.static() == {"dataset", "overlap", "estimate"}
    doors = ", ".join(stages.front_door(n) for n in sorted(stages.static()))
    loaded = {m.split(".")[0] for m in imported_after(f"import {doors}")}
    assert not loaded & set(HEAVY)


def test_the_table_imports_nothing_but_itself():
    loaded = imported_after("import tunegate.stages")
    assert {m for m in loaded if m.startswith("tunegate")} == {"tunegate", "tunegate.stages"}
    assert "pydantic" not in loaded


def test_bare_data_runs_the_data_stages_only():
    assert stages.applicable(GateContext(None, None, {"train": SHAREGPT}, cap=20)) == ["dataset", "overlap"]


def test_the_estimate_needs_a_spec_the_mini_run_and_advisor_are_asked_for():
    from tunegate.spec.check import parse_spec

    spec = parse_spec(QUICKSTART).spec
    ctx = GateContext(QUICKSTART, spec, {}, cap=20)
    assert stages.applicable(ctx) == ["dataset", "overlap", "estimate"]
    ctx.mini_run = ctx.advisor = True
    assert stages.applicable(ctx) == ["dataset", "overlap", "estimate", "mini-run", "advisor"]
    bare = GateContext(None, None, {}, cap=20, mini_run=True, advisor=True)
    assert stages.applicable(bare) == ["dataset", "overlap", "mini-run"]  # no spec to advise on


def test_the_readme_gate_table_numbers_the_stages_and_says_what_each_needs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| ([\w-]+) \| ([^|]+) \|", readme, re.M)
    assert rows == [(str(i), s.name, s.needs) for i, s in enumerate(stages.STAGES)]


TOY_STAGE = '''"""A toy stage: passes, and says how many files it saw."""
from tunegate.report import StageResult
from tunegate.stage import GateContext


def run_stage(ctx: GateContext) -> StageResult:
    return StageResult(name="toy", status="passed", stats={"summary": "toy checked", "files": len(ctx.files)})
'''
TOY_ROW = '    StageRow("toy", "toy", required=False, static=True, needs="nothing"),\n'


def checked(package_root: Path) -> dict:
    """The quickstart's JSON report from the tunegate under `package_root`, wall times left out."""
    # cwd too: `python -m` puts it first on sys.path.
    run = subprocess.run([sys.executable, "-m", "tunegate", "check", str(QUICKSTART), "--json"],
                         cwd=package_root, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(package_root)})
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    for stage in report["stages"]:
        stage.pop("duration_s")
        stage["stats"].pop("timing_s", None)  # the overlap stage's phases
    return report


def test_a_new_stage_is_one_folder_and_one_row(tmp_path):
    shutil.copytree(ROOT / "tunegate", tmp_path / "tunegate", ignore=shutil.ignore_patterns("__pycache__"))
    toy = tmp_path / "tunegate" / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text('"""The toy stage."""\n')
    (toy / "stage.py").write_text(TOY_STAGE)
    table = tmp_path / "tunegate" / "stages.py"
    text = table.read_text()
    overlap_row = next(line for line in text.splitlines(keepends=True)
                       if line.lstrip().startswith('StageRow("overlap"'))
    table.write_text(text.replace(overlap_row, overlap_row + TOY_ROW))

    before, after = checked(ROOT), checked(tmp_path)
    names = [s["name"] for s in after["stages"]]
    assert names == ["spec", "dataset", "overlap", "toy", "estimate"]
    toy_result = after["stages"].pop(3)
    assert toy_result["status"] == "passed" and toy_result["stats"] == {"summary": "toy checked", "files": 2}
    assert after == before
