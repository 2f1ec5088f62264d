"""What the verdict covers: APPROVED only when every required gate ran and passed (issue 11, item 5).

Exit codes stay what a CI job relies on (0 every gate that ran passed, 1 a gate rejected, 2 usage);
the report says which gates passed and which did not run, and `--require-full-approval` exits 1
unless a full run is approved.
"""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import DATA, ROOT
from tunegate.report import GateReport

FLOWS = DATA / "flows"


def tunegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_train_data_alone_passes_its_gates_but_is_not_approved_for_a_full_run():
    run = tunegate("check", "--train", str(FLOWS / "train.jsonl"), "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 0  # the gate that ran (dataset) passed
    assert report["gates_passed"] is True and report["approved_for_full_run"] is False
    assert report["not_run"]["overlap"] == "skipped: no validation file given: nothing to compare"
    assert set(report["not_run"]) == {"spec", "overlap", "estimate", "mini-run"}


def test_the_terminal_says_which_gates_passed_and_which_did_not_run():
    run = tunegate("check", "--train", str(FLOWS / "train.jsonl"))
    assert "APPROVED for a full run" not in run.stdout.replace("NOT APPROVED for a full run", "")
    verdict = next(line for line in run.stdout.splitlines() if line.startswith("NOT APPROVED"))
    assert "dataset passed" in verdict and "overlap skipped: no validation file given" in verdict
    assert "mini-run not run" in verdict


def test_a_spec_checked_without_the_mini_run_is_not_approved_and_says_so():
    run = tunegate("check", str(FLOWS / "good.yaml"), "--json")
    report = json.loads(run.stdout)
    assert run.returncode == 0
    assert report["approved_for_full_run"] is False and report["not_run"] == {"mini-run": "not run"}
    text = tunegate("check", str(FLOWS / "good.yaml")).stdout
    assert "spec, dataset, overlap, estimate passed; mini-run not run" in text


def test_require_full_approval_exits_1_unless_a_full_run_is_approved():
    run = tunegate("check", str(FLOWS / "good.yaml"), "--require-full-approval")
    assert run.returncode == 1
    assert "NOT APPROVED for a full run" in run.stdout


def test_a_rejection_still_exits_1_with_or_without_the_flag():
    for extra in ((), ("--require-full-approval",)):
        assert tunegate("check", str(FLOWS / "bad_data.yaml"), *extra).returncode == 1


def test_the_caveats_are_in_the_json_and_beside_the_verdict_in_the_terminal():
    from tunegate.report import CAVEATS

    report = json.loads(tunegate("check", str(FLOWS / "good.yaml"), "--json").stdout)
    assert report["caveats"] == list(CAVEATS)
    text = tunegate("check", str(FLOWS / "good.yaml")).stdout
    assert all(f"note: {c}" in text for c in CAVEATS)
    assert "review representative samples" in text and "frozen validation set" in text


def test_a_report_written_before_read_back_cannot_approve_what_its_stages_do_not_hold():
    old = json.loads((DATA / "approval" / "static_only_report.json").read_text())
    assert old["approved_for_full_run"] is True  # what the old gate wrote for spec..estimate only
    report = GateReport.model_validate(old)
    assert report.gates_passed and not report.approved_for_full_run
    assert report.not_run == {"mini-run": "not run"}


def test_the_markdown_report_heads_with_the_verdict_and_lists_the_caveats():
    from tunegate.render import markdown
    from tunegate.report import CAVEATS

    report = GateReport.model_validate_json((DATA / "approval" / "static_only_report.json").read_text())
    text = markdown(report)
    assert text.splitlines()[0] == ("# tunegate preflight: ⚠️ not approved for a full run: spec, dataset, "
                                    "overlap, estimate passed; mini-run not run")
    assert all(f"- {c}" in text for c in CAVEATS)
