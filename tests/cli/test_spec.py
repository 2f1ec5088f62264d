"""The command line on specs: exit codes 1 and 2, the schema command, never a traceback."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import DATA, ROOT

SPECS = DATA / "spec"


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_missing_spec_file_exits_2_with_a_message():
    run = tunegate("check", "no/such/spec.yaml")
    assert run.returncode == 2
    assert "spec file not found: no/such/spec.yaml" in run.stderr
    assert "Traceback" not in run.stderr


def test_bad_flag_exits_2():
    run = tunegate("check", "--max-findings", "0", str(SPECS / "good.yaml"))
    assert run.returncode == 2
    assert "positive integer" in run.stderr


def test_check_without_inputs_is_a_usage_error():
    run = tunegate("check")
    assert run.returncode == 2
    assert "give a spec" in run.stderr


def test_broken_spec_exits_1_and_lists_each_finding_with_its_place():
    run = tunegate("check", "examples/broken.yaml")
    assert run.returncode == 1
    assert "examples/broken.yaml:14:3 (training.grad_acum_steps) TG101" in run.stdout
    assert "REJECTED at stage 'spec'" in run.stdout
    assert "\x1b[" not in run.stdout  # no colour when not on a terminal


def test_json_report_of_a_broken_spec_is_one_document_with_the_design_shape():
    run = tunegate("check", "examples/broken.yaml", "--json")
    report = json.loads(run.stdout)
    assert report["approved_for_full_run"] is False
    assert [s["name"] for s in report["stages"]][:2] == ["spec", "dataset"]
    assert report["stages"][1]["status"] == "skipped"
    first = report["findings"][0]
    assert set(first) >= {"code", "severity", "stage", "file", "line", "column", "message", "hint"}
    assert report["counts"]["error"] == len([f for f in report["findings"] if f["severity"] == "error"])


def test_yaml_syntax_error_is_a_finding_not_a_crash():
    run = tunegate("check", str(SPECS / "bad_yaml.yaml"))
    assert run.returncode == 1
    assert "TG106" in run.stdout and "Traceback" not in run.stderr


def test_schema_prints_valid_json_schema():
    run = tunegate("schema")
    assert run.returncode == 0
    schema = json.loads(run.stdout)
    assert "training" in schema["properties"]
