"""A split of several files is read in order as one stream, each record at its own file and line.

The halves under tests/data/splits are committed files cut in two (`cat` of the halves is the whole):
read as one split they must give what the whole file gives, their places in their own files.
"""
from __future__ import annotations

from pathlib import Path

from tests.support.paths import DATA
from tunegate.dataset.fingerprint import FingerprintObserver, fingerprint_file
from tunegate.dataset.stage import validate_dataset

BAD = DATA / "dataset" / "bad"
HALVES = [DATA / "splits" / "train_first.jsonl", DATA / "splits" / "train_second.jsonl"]
WHOLE = DATA / "overlap" / "train.jsonl"


def read(files: dict, cap: int = 20):
    prints: dict = {}
    result = validate_dataset(files, cap, [FingerprintObserver(prints, files)])
    return result.model_dump(exclude={"duration_s"}), prints


def test_a_split_of_one_file_given_as_a_list_is_read_exactly_as_the_file():
    for path in (BAD / "last_from_user.jsonl", BAD / "duplicate_record.jsonl", WHOLE):
        assert read({"train": [path]}) == read({"train": path})


def test_each_finding_of_a_split_of_two_files_is_at_its_own_file_and_line():
    first, second = BAD / "last_from_user.jsonl", BAD / "empty_content.jsonl"
    result, _ = read({"train": [first, second]})
    assert [(f["code"], f["file"], f["line"]) for f in result["findings"]] == [
        ("TG204", str(first), 2), ("TG207", str(second), 2)]
    alone = [read({"train": path})[0] for path in (first, second)]
    assert result["findings"] == alone[0]["findings"] + alone[1]["findings"]


def test_the_stats_of_a_split_of_two_files_count_the_records_of_both():
    stats = read({"train": HALVES})[0]["stats"]["train"]
    whole = read({"train": WHOLE})[0]["stats"]["train"]
    assert [(Path(s["file"]).name, s["records"]) for s in stats["files"]] == [
        ("train_first.jsonl", 5), ("train_second.jsonl", 7)]
    same = ("records", "lines", "blank_lines", "format", "container", "turns", "chars_per_role", "roles",
            "content_chars")
    assert {k: stats[k] for k in same} == {k: whole[k] for k in same}


def test_a_split_of_two_files_has_the_digest_of_their_concatenation():
    _, prints = read({"train": HALVES})
    whole = fingerprint_file(WHOLE)
    assert (prints["train"]["digest"], prints["train"]["records"]) == (whole.digest, whole.records)
    assert prints["train"]["files"] == [str(p) for p in HALVES] and prints["train"]["file"] == str(HALVES[0])
    assert fingerprint_file(HALVES).digest == whole.digest


def test_the_fingerprint_of_one_file_keeps_its_shape():
    _, prints = read({"train": WHOLE})
    assert prints["train"] == fingerprint_file(WHOLE).model_dump()
    assert set(prints["train"]) == {"digest", "records", "file", "algorithm"}


def test_the_order_of_the_files_is_the_order_of_the_records():
    assert fingerprint_file(HALVES[::-1]).digest != fingerprint_file(HALVES).digest
