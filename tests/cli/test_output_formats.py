"""The CLI's CI-native output: --output-format, GitHub Actions annotations, and stdout never mixed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import jsonschema

from tests.support.paths import DATA, ROOT
from tunegate import check

BAD = "tests/data/dataset/bad/last_from_user.jsonl"
SCHEMA = json.loads((DATA / "output" / "sarif-schema-2.1.0.json").read_text())


def tunegate(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**clean, **env})


def test_github_format_prints_only_workflow_commands():
    run = tunegate("check", "examples/broken.yaml", "--output-format", "github")
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    findings = check(ROOT / "examples" / "broken.yaml").findings
    assert len(lines) == len(findings) + 1 and all(line.startswith("::") for line in lines)  # + the verdict notice
    assert lines[0].startswith("::error file=examples/broken.yaml,line=")


def test_under_github_actions_the_text_report_is_followed_by_annotations_and_a_job_summary(tmp_path):
    summary = tmp_path / "summary.md"
    run = tunegate("check", "--train", BAD, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    assert run.returncode == 1
    assert "REJECTED at stage 'dataset'" in run.stdout
    assert f"::error file={BAD},line=2," in run.stdout
    assert "| `" + BAD in summary.read_text() and "❌ rejected" in summary.read_text()


def test_under_github_actions_json_stays_one_json_document():
    run = tunegate("check", "--train", BAD, "--json", GITHUB_ACTIONS="true")
    assert json.loads(run.stdout)["approved_for_full_run"] is False


def test_lint_writes_valid_sarif():
    run = tunegate("lint", BAD, "examples/data/validation.jsonl", "--output-format", "sarif")
    assert run.returncode == 1
    log = json.loads(run.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["TG204"]


def test_check_writes_junit_that_parses():
    run = tunegate("check", "--train", BAD, "--output-format", "junit")
    assert ET.fromstring(run.stdout).get("failures") == "1"


def test_two_formats_for_stdout_is_a_usage_error():
    run = tunegate("check", "examples/quickstart.yaml", "--json", "--output-format", "sarif")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == "tunegate: error: --json and --output-format sarif ask for two formats on stdout; give one\n"
