"""The command line on data files: `check --train/--validation` and `lint`, exit codes and JSON."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import DATA, ROOT

CORPUS = DATA / "dataset"
TRAIN, VAL = "examples/data/train.jsonl", "examples/data/validation.jsonl"
BAD = str(CORPUS / "bad" / "last_from_user.jsonl")
FINDING_KEYS = {"code", "severity", "stage", "file", "line", "column", "record", "message", "hint"}


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_quickstart_spec_is_approved_with_both_splits_read():
    run = tunegate("check", "examples/quickstart.yaml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "train 85 records, validation 20 records" in run.stdout and "APPROVED" in run.stdout


def test_good_train_and_validation_files_exit_0():
    run = tunegate("check", "--train", TRAIN, "--validation", VAL)
    assert run.returncode == 0 and "spec: skipped" in run.stdout


def test_a_bad_file_exits_1_with_file_line_column_code():
    run = tunegate("check", "--train", BAD)
    assert run.returncode == 1
    assert f"{BAD}:2:" in run.stdout and "TG204" in run.stdout and "fix:" in run.stdout
    assert "REJECTED at stage 'dataset'" in run.stdout and "Traceback" not in run.stderr


def test_validation_alone_is_checked():
    run = tunegate("check", "--validation", BAD, "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 1 and list(report["stages"][1]["stats"]) == ["validation"]


def test_missing_data_file_is_a_finding_not_a_usage_error():
    run = tunegate("check", "--train", "no/such.jsonl")
    assert run.returncode == 1 and "TG240" in run.stdout


def test_json_report_has_the_design_shape():
    run = tunegate("check", "--train", TRAIN, "--validation", BAD, "--json")
    report = json.loads(run.stdout)
    assert report["approved_for_full_run"] is False
    assert [(s["name"], s["status"]) for s in report["stages"]] == [("spec", "skipped"), ("dataset", "failed"),
                                                                     ("overlap", "skipped")]
    stats = report["stages"][1]["stats"]
    assert stats["train"]["records"] == 85 and stats["validation"]["records"] == 2
    assert set(stats["train"]) >= {"records", "blank_lines", "turns", "chars_per_role", "roles"}
    assert set(stats["train"]["chars_per_role"]["user"]) == {"min", "median", "p95", "max"}
    (finding,) = report["findings"]
    assert set(finding) >= FINDING_KEYS
    assert (finding["code"], finding["severity"], finding["stage"], finding["line"]) == ("TG204", "error", "dataset", 2)
    assert report["counts"] == {"error": 1, "warning": 0, "info": 0}


def test_max_findings_caps_what_is_shown_not_what_is_counted():
    bad = str(CORPUS / "bad" / "pretty_printed.jsonl")
    run = tunegate("check", "--train", bad, "--validation", str(CORPUS / "bad" / "utf16.jsonl"),
                   "--json", "--max-findings", "1")
    report = json.loads(run.stdout)
    assert report["stages"][1]["totals_by_code"] == {"TG220": 1, "TG245": 1}


def test_lint_clean_files_exit_0():
    run = tunegate("lint", TRAIN, VAL)
    assert run.returncode == 0 and "OK: 2 file(s), 0 error(s)" in run.stdout


def test_lint_reports_each_file_on_its_own_and_exits_1():
    run = tunegate("lint", TRAIN, BAD, str(CORPUS / "bad" / "bom.jsonl"))
    assert run.returncode == 1
    assert f"✓ {TRAIN}: 85 records" in run.stdout and f"✗ {BAD}: 2 records" in run.stdout
    assert "bom.jsonl:1:1 TG244" in run.stdout


def test_lint_warnings_pass_unless_strict():
    warn = str(CORPUS / "bad" / "duplicate_record.jsonl")
    assert tunegate("lint", warn).returncode == 0
    assert tunegate("lint", "--strict", warn).returncode == 1


def test_lint_json_is_one_document():
    run = tunegate("lint", "--json", BAD, VAL)
    doc = json.loads(run.stdout)
    assert doc["passed"] is False and doc["counts"] == {"error": 1, "warning": 0}
    assert set(doc["files"]) == {BAD, VAL}
    assert set(doc["findings"][0]) >= FINDING_KEYS


def test_lint_without_files_is_a_usage_error():
    run = tunegate("lint")
    assert run.returncode == 2 and "FILE" in run.stderr


def test_lint_gzip_files():
    run = tunegate("lint", str(CORPUS / "good" / "compressed.jsonl.gz"), str(CORPUS / "bad" / "truncated.jsonl.gz"))
    assert run.returncode == 1 and "TG246" in run.stdout


def test_train_given_twice_is_one_split_of_both_files_in_order():
    halves = [str(DATA / "splits" / name) for name in ("train_first.jsonl", "train_second.jsonl")]
    run = tunegate("check", "--train", halves[0], "--train", halves[1], "--validation", VAL, "--json")
    report = json.loads(run.stdout)
    [dataset] = [s for s in report["stages"] if s["name"] == "dataset"]
    assert [f["file"] for f in dataset["stats"]["train"]["files"]] == halves
    assert report["fingerprints"]["train"]["files"] == halves and report["fingerprints"]["train"]["records"] == 12
