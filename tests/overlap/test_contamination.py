"""How much overlap the gate lets through (issue 11, item 6), on the support-chat data of tests/data/flows.

tests/data/overlap/validation_one_near_copy.jsonl is the flows validation set with its last record
replaced by train.jsonl:1 with one word of the reply changed (estimated Jaccard 0.96, and its prompt
leaks); validation_two_near_copies.jsonl replaces the last two, with near copies of train:1 and
train:2. train_exact_repeat.jsonl is overlap/train.jsonl with line 2 copied byte for byte to line 13
(and line 6 repeating line 1 in other case and spacing).
"""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.gate import check

FLOWS, OVERLAP = DATA / "flows", DATA / "overlap"


def codes_at(report, line: int) -> set[str]:
    return {f.code for f in report.findings if f.line == line}


def test_one_near_copy_in_twenty_validation_records_is_a_warning():
    report = check(train=FLOWS / "train.jsonl", validation=OVERLAP / "validation_one_near_copy.jsonl")
    overlap = report.stage("overlap")
    assert overlap.status == "passed" and overlap.stats["contaminated_share"] == 0.05
    assert codes_at(report, 20) == {"TG302", "TG303"}
    assert "TG308" not in report.codes()


def test_near_copies_above_the_share_limit_reject_even_though_each_is_a_warning():
    report = check(train=FLOWS / "train.jsonl", validation=OVERLAP / "validation_two_near_copies.jsonl")
    overlap = report.stage("overlap")
    assert overlap.status == "failed" and not report.gates_passed
    [share] = [f for f in report.findings if f.code == "TG308"]
    assert share.severity == "error" and "2 of 20 validation records (10%)" in share.message
    assert {f.severity for f in report.findings if f.code in ("TG302", "TG303")} == {"warning"}


def test_the_share_limit_is_a_setting(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"data: {{train: {FLOWS / 'train.jsonl'}, validation: {OVERLAP / 'validation_two_near_copies.jsonl'}}}\n"
                    "gate: {overlap: {max_contaminated_share: 0.1}}\n", encoding="utf-8")
    report = check(spec, only={"dataset", "overlap"})
    assert report.stage("overlap").status == "passed" and "TG308" not in report.codes()


def test_a_byte_identical_repeat_in_train_is_reported_once_not_twice():
    report = check(train=OVERLAP / "train_exact_repeat.jsonl", validation=OVERLAP / "disjoint_validation.jsonl")
    assert codes_at(report, 13) == {"TG210"}  # the dataset stage's; the overlap stage does not repeat it
    assert codes_at(report, 6) == {"TG304"}  # a repeat only after normalising is the overlap stage's
    assert report.stage("overlap").stats["train_repeats"] == {"groups": 1, "records": 1, "byte_identical": 1}
