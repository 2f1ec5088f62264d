"""The overlap stage on splits of several files: every file of a role is compared, each record named
at its own file and line.

tests/data/splits/train_first.jsonl + train_second.jsonl is tests/data/overlap/train.jsonl cut after
line 5; read against tests/data/overlap/validation.jsonl the halves must give the whole file's
overlap, with the places moved into the halves.
"""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.gate import check
from tunegate.overlap.near import find_near_duplicates

HALVES = [DATA / "splits" / "train_first.jsonl", DATA / "splits" / "train_second.jsonl"]
WHOLE, VALIDATION = DATA / "overlap" / "train.jsonl", DATA / "overlap" / "validation.jsonl"


def overlap(**files):
    return check(**files, only=["dataset", "overlap"]).stage("overlap")


def test_a_split_of_two_files_has_the_overlap_of_the_whole_file_at_each_records_own_file_and_line():
    whole, halves = overlap(train=WHOLE, validation=VALIDATION), overlap(train=HALVES, validation=VALIDATION)
    assert [(f.code, f.file, f.line, f.record) for f in halves.findings if f.code != "TG304"] == [
        (f.code, f.file, f.line, f.record) for f in whole.findings if f.code != "TG304"]  # validation places
    messages = [f.message for f in halves.findings]
    assert "train_second.jsonl:4 == validation.jsonl:2" in messages[0]  # the whole file's train.jsonl:9
    assert "train_first.jsonl:5 == validation.jsonl:4" in messages[2]
    assert "train_second.jsonl:6 prompt == validation.jsonl:5" in messages[3]
    assert any("train_first.jsonl:4 ~ validation.jsonl:6" in m for m in messages)
    assert any("in train_first.jsonl + train_second.jsonl, above" in m for m in messages)
    assert halves.totals_by_code == whole.totals_by_code


def test_a_record_repeated_in_another_file_of_the_split_is_named_in_both():
    [repeat] = [f for f in overlap(train=HALVES, validation=VALIDATION).findings if f.code == "TG304"]
    assert (repeat.file, repeat.line, repeat.record) == (str(HALVES[1]), 1, 0)  # line 6, record 5 of the whole
    assert repeat.message == ("record at train_first.jsonl:1 is repeated 1 more time(s) in train "
                              "(train_second.jsonl:1)")


def test_the_overlap_stage_run_as_its_own_step_reads_every_file_of_the_split():
    alone = check(train=HALVES, validation=VALIDATION, only=["overlap"])
    assert alone.stage("overlap").stats["read_by"] == "overlap stage"
    assert alone.stage("overlap").findings == overlap(train=HALVES, validation=VALIDATION).findings
    assert alone.fingerprints["train"]["files"] == [str(p) for p in HALVES]


def test_near_duplicates_are_found_across_every_file_of_a_split():
    found = find_near_duplicates({"train": HALVES, "validation": VALIDATION}, "validation", threshold=0.8,
                                 shingle_size=5, num_perm=128)
    assert [(pair.validation, pair.train) for pair in found.pairs] == [((6, 5), (4, 3))]  # train_first.jsonl:4


def test_a_validation_file_that_is_one_of_the_training_files_is_rejected():
    stage = overlap(train=HALVES, validation=HALVES[1])
    assert [(f.code, f.file) for f in stage.findings] == [("TG306", str(HALVES[1]))]
    assert "is one of the training files" in stage.findings[0].message
