"""The token audit, the mini-run's sample and the full run's data on a split of several files.

tests/data/splits/minirun_train_first.jsonl + minirun_train_second.jsonl is tests/data/minirun/train.jsonl
cut after line 6: read as one split, the halves give the whole file's records, each at its own place.
"""
from __future__ import annotations

from tests.support.minirun import DATA, load_spec
from tests.support.paths import DATA as TEST_DATA
from tunegate.dataset.records import read_chats
from tunegate.minirun.session import pick_sample
from tunegate.report import FindingCollector
from tunegate.training.token_audit import audit_split

HALVES = [TEST_DATA / "splits" / "minirun_train_first.jsonl", TEST_DATA / "splits" / "minirun_train_second.jsonl"]
NAMES = ["minirun_train_first.jsonl", "minirun_train_second.jsonl"]


def test_the_audit_of_a_split_of_two_files_is_the_audit_of_the_whole_file(tokenizer):
    whole, halves = FindingCollector("mini-run"), FindingCollector("mini-run")
    stats, audited = audit_split(DATA / "train.jsonl", "train.jsonl", tokenizer, 256, whole)
    split_stats, split_audited = audit_split(HALVES, NAMES, tokenizer, 256, halves)
    assert split_stats == stats
    assert [a.encoded for a in split_audited] == [a.encoded for a in audited]
    assert [(a.record.file, a.record.index) for a in split_audited] == [(0, i) for i in range(6)] + [
        (1, i) for i in range(6)]


def test_a_finding_of_the_audit_names_the_records_own_file_and_line(tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split([DATA / "train.jsonl", DATA / "train_empty_content.jsonl"],
                             ["train.jsonl", "train_empty_content.jsonl"], tokenizer, 256, out)
    assert [(f.code, f.file, f.line, f.record) for f in out.kept] == [("TG502", "train_empty_content.jsonl", 2, 1)]
    assert [a.usable for a in audited].count(False) == 1 and len(audited) == 12 + 3


def test_a_uniform_sample_is_drawn_from_every_file_of_the_split():
    sample = read_chats(HALVES, limit=6, seed=3)
    assert sample.total == 12 and sample.sampled
    assert {r.file for r in sample.records} == {0, 1}
    assert [(r.file, r.index) for r in sample.records] == sorted((r.file, r.index) for r in sample.records)


def test_the_mini_run_sample_of_a_split_of_two_files_is_the_whole_files_sample(tokenizer):
    _, whole = audit_split(DATA / "train.jsonl", "train.jsonl", tokenizer, 256, FindingCollector("mini-run"))
    _, halves = audit_split(HALVES, NAMES, tokenizer, 256, FindingCollector("mini-run"))
    picked = pick_sample([a for a in halves if a.usable], 8, 4, 0)
    assert [a.encoded for a in picked] == [a.encoded for a in pick_sample([a for a in whole if a.usable], 8, 4, 0)]
    assert {a.record.file for a in picked} == {0, 1}  # drawn from both files


def test_the_full_run_reads_every_file_of_each_split(tokenizer):
    from tunegate.fullrun.data import load_splits

    lines: list[str] = []
    data = load_splits(load_spec("good", **{"data.train": HALVES}), tokenizer, lines.append)
    whole = load_splits(load_spec("good"), tokenizer, [].append)
    assert data.train == whole.train and data.validation == whole.validation
    assert lines[0].startswith("train: 12 records read from ") and " + " in lines[0]
    assert lines[0].endswith("minirun_train_second.jsonl, 12 usable")
