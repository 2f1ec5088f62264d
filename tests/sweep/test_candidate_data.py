"""A sweep candidate that changes the data is gated on its own data (issue 11, item 1).

tests/data/flows/leaky_train.jsonl is train.jsonl plus all 20 validation records verbatim;
validation_other.jsonl is the first 19 validation records. leaky.yaml is the sweep over them.
"""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.gate import check
from tunegate.spec.check import parse_spec
from tunegate.sweep.candidate_gate import changed_data_inputs, gate_candidate
from tunegate.sweep.candidates import run_name, write_candidate_spec

FLOWS = DATA / "flows"
STATIC_STAGES = {"dataset", "overlap", "estimate"}  # what the sweep flow runs once, on the base spec


def _sweep_base(workdir):
    base = parse_spec(workdir / "leaky.yaml")
    return base, check(base, only=STATIC_STAGES)


def _candidate(base, overrides):
    return parse_spec(write_candidate_spec(base, overrides))


def test_a_candidate_training_on_validation_records_is_rejected_by_its_own_overlap_stage(workdir):
    base, base_report = _sweep_base(workdir)
    report = gate_candidate(_candidate(base, {"data.train": "leaky_train.jsonl"}), base, base_report)
    overlap = report.stage("overlap")
    assert overlap.status == "failed" and overlap.totals_by_code["TG301"] == 20
    assert report.stage("mini-run").status == "skipped"  # never trained, never mini-run
    assert not report.approved_for_full_run
    # its own digests and record counts, not the base's
    assert report.fingerprints["train"]["records"] == 105 == report.stage("dataset").stats["train"]["records"]
    assert report.fingerprints["train"]["digest"] != base_report.fingerprints["train"]["digest"]
    assert report.fingerprints["validation"] == base_report.fingerprints["validation"]


def test_the_gate_run_by_hand_on_the_same_two_files_agrees(workdir):
    by_hand = check(train=workdir / "leaky_train.jsonl", validation=workdir / "validation.jsonl")
    assert by_hand.stage("overlap").totals_by_code["TG301"] == 20 and not by_hand.gates_passed


def test_a_candidate_scored_on_another_validation_set_is_rejected_before_its_mini_run(workdir):
    base, base_report = _sweep_base(workdir)
    report = gate_candidate(_candidate(base, {"data.validation": "validation_other.jsonl"}), base, base_report)
    names = [s.name for s in report.stages]
    assert names.index("frozen-validation") < names.index("mini-run")
    frozen = report.stage("frozen-validation")
    assert frozen.status == "failed" and [f.code for f in frozen.findings] == ["TG391"]
    assert "validation_other.jsonl" in frozen.findings[0].message
    assert report.stage("mini-run").status == "skipped"
    assert report.stage("mini-run").reason == "the validation set is not the sweep's"


def test_a_validation_file_changed_during_the_sweep_is_caught_before_the_mini_run(workdir):
    base, base_report = _sweep_base(workdir)
    lines = (workdir / "validation.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (workdir / "validation.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")
    report = gate_candidate(_candidate(base, {"lora.r": 4, "lora.alpha": 8}), base, base_report)
    assert [f.code for f in report.stage("frozen-validation").findings] == ["TG390"]
    assert report.stage("mini-run").status == "skipped"


def test_a_spec_rejected_candidate_inherits_no_verdict_from_the_base(workdir):
    base, base_report = _sweep_base(workdir)
    report = gate_candidate(_candidate(base, {"lora.r": True}), base, base_report)
    assert report.stage("spec").status == "failed"
    assert {s.name: s.status for s in report.stages[1:]} == {
        "dataset": "skipped", "overlap": "skipped", "estimate": "skipped", "mini-run": "skipped"}


def test_what_the_data_stages_and_the_token_audit_depend_on_is_compared(workdir):
    base, _ = _sweep_base(workdir)
    spec = base.require()
    assert changed_data_inputs(_candidate(base, {"lora.r": 4}).require(), spec) == []
    assert changed_data_inputs(_candidate(base, {"data.train": "train.jsonl"}).require(), spec) == []  # same file
    assert changed_data_inputs(_candidate(base, {"training.max_seq_len": 512}).require(), spec) == [
        "training.max_seq_len"]
    assert changed_data_inputs(_candidate(base, {"model.revision": "main"}).require(), spec) == ["model.revision"]


def test_run_names_say_what_a_candidate_changes():
    assert run_name({"lora.r": 16, "lora.alpha": 32, "training.learning_rate": 1e-3}) == "r16-a32-lr1e-3"
    assert run_name({"data.train": "leaky_train.jsonl"}) == "train=leaky_train"
    assert run_name({"lora.r": True}) == "r=true" and run_name({}) == "base"
    assert run_name({"data.version": "sk-proj-Zq8vN3xL0pR7tY2wB5kM9cD1fG4hJ6sA"}) == "version=[key not shown]"
