"""The overlap stage inside the gate: spec -> dataset -> overlap, fingerprints in the report.

The gate tests need the dataset stage (tunegate.dataset.stage), which feeds the observers; they skip
until it is present.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import DATA as TEST_DATA
from tests.support.paths import ROOT

DATA = TEST_DATA / "overlap"
QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def test_importing_the_gate_and_overlap_stage_pulls_in_no_heavy_package():
    code = ("import sys, tunegate.gate, tunegate.overlap.stage, tunegate.cli.fingerprint; "
            "print(sorted(m for m in ('torch', 'prefect', 'mlflow', 'datasketch', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_overlap_run_as_its_own_step_reads_the_files_itself():
    from tunegate.gate import check

    report = check(train=DATA / "train.jsonl", validation=DATA / "validation.jsonl", only=["overlap"])
    overlap = report.stage("overlap")
    assert overlap.stats["read_by"] == "overlap stage"
    assert {"TG301", "TG302", "TG303", "TG304"} <= report.codes()
    assert report.fingerprints["validation"]["records"] == 7


def test_overlap_step_with_one_split_is_skipped():
    from tunegate.gate import check

    report = check(train=DATA / "train.jsonl", only=["overlap"])
    assert report.stage("overlap").status == "skipped"
    assert "no validation file given" in report.stage("overlap").reason


def test_overlap_step_on_a_missing_file_is_skipped_with_the_reason(tmp_path):
    from tunegate.gate import check

    report = check(train=DATA / "train.jsonl", validation=tmp_path / "gone.jsonl", only=["overlap"])
    assert report.stage("overlap").status == "skipped"
    assert "file not found" in report.stage("overlap").reason


def spec_for(tmp_path: Path, train: Path, validation: Path) -> Path:
    text = QUICKSTART.read_text(encoding="utf-8")
    text = text.replace("data/train.jsonl", str(train)).replace("data/validation.jsonl", str(validation))
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def gate_check():
    pytest.importorskip("tunegate.dataset.stage", reason="the dataset stage feeds the overlap observers")
    from tunegate.gate import check

    return check


def test_check_runs_overlap_after_dataset_and_reports_its_stats(gate_check, tmp_path):
    report = gate_check(spec_for(tmp_path, DATA / "train.jsonl", DATA / "disjoint_validation.jsonl"))
    assert [s.name for s in report.stages][:3] == ["spec", "dataset", "overlap"]
    overlap = report.stage("overlap")
    assert overlap.status == "passed"
    assert overlap.stats["read_by"] == "dataset stage"  # one read of each file serves both stages
    assert (overlap.stats["train"]["records"], overlap.stats["validation"]["records"]) == (12, 3)


def test_check_rejects_a_validation_set_copied_from_train(gate_check):
    report = gate_check(train=DATA / "train.jsonl", validation=DATA / "validation.jsonl")
    assert report.stage("overlap").status == "failed"
    assert {"TG301", "TG302", "TG303", "TG304"} <= report.codes()
    assert not report.approved_for_full_run


def test_an_overlap_between_files_whose_names_are_not_utf8_is_named_printably(gate_check, tmp_path):
    import os
    import shutil

    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"val\xff.jsonl"))
    shutil.copyfile(DATA / "validation.jsonl", odd)
    report = gate_check(train=DATA / "train.jsonl", validation=Path(odd))
    leak = next(f for f in report.stage("overlap").findings if f.code == "TG301")
    assert "val\\xff.jsonl:" in leak.message
    json.loads(report.model_dump_json())  # every writer of the report (preflight, approval, MLflow) can write it


def test_report_carries_the_fingerprint_of_each_split(gate_check):
    from tunegate.dataset.fingerprint import fingerprint_file

    report = gate_check(train=DATA / "train.jsonl", validation=DATA / "disjoint_validation.jsonl")
    for role, path in (("train", "train.jsonl"), ("validation", "disjoint_validation.jsonl")):
        expected = fingerprint_file(DATA / path)
        assert report.fingerprints[role]["digest"] == expected.digest
        assert report.fingerprints[role]["records"] == expected.records


def test_with_one_split_overlap_is_skipped_but_its_fingerprint_is_kept(gate_check):
    report = gate_check(train=DATA / "train.jsonl")
    overlap = report.stage("overlap")
    assert overlap.status == "skipped" and "validation" in overlap.reason
    assert report.fingerprints["train"]["records"] == 12


def test_bare_files_that_are_the_same_file_are_rejected(gate_check):
    report = gate_check(train=DATA / "train.jsonl", validation=DATA / "train.jsonl")
    assert "TG306" in report.codes()


def test_cli_json_report_shows_the_overlap_stage(gate_check):
    out = subprocess.run([sys.executable, "-m", "tunegate", "check", "--json", "--train", str(DATA / "train.jsonl"),
                          "--validation", str(DATA / "disjoint_validation.jsonl")],
                         cwd=ROOT, capture_output=True, text=True)
    report = json.loads(out.stdout)
    overlap = next(s for s in report["stages"] if s["name"] == "overlap")
    assert overlap["stats"]["exact_duplicates"] == 0
    assert set(report["fingerprints"]) == {"train", "validation"}
