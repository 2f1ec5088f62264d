"""An approval covers every file of a split: a change to any of them makes it stale."""
from __future__ import annotations

import shutil

from tests.support.paths import DATA
from tunegate.fullrun.approval import stale_reasons
from tunegate.gate import check


def test_an_approval_of_a_split_of_two_files_is_stale_once_either_file_changes(tmp_path):
    halves = [tmp_path / "train_first.jsonl", tmp_path / "train_second.jsonl"]
    for path in halves:
        shutil.copy(DATA / "splits" / path.name, path)
    validation = DATA / "overlap" / "disjoint_validation.jsonl"
    report = check(train=halves, validation=validation, only=["dataset"])
    spec = DATA / "spec" / "good.yaml"
    assert not [r for r in stale_reasons(report, spec, halves, validation) if "data" in r]
    halves[1].write_text(halves[1].read_text(encoding="utf-8").replace("Paris", "Lyon"), encoding="utf-8")
    assert "the train data (train_first.jsonl + train_second.jsonl) changed since it was approved" in \
        stale_reasons(report, spec, halves, validation)


def test_an_approval_recorded_with_first_version_digests_holds_until_the_data_changes(tmp_path):
    from tunegate.dataset.fingerprint import SHA256, fingerprint_file

    train = tmp_path / "train.jsonl"
    shutil.copy(DATA / "splits" / "train_first.jsonl", train)
    validation = DATA / "overlap" / "disjoint_validation.jsonl"
    report = check(train=train, validation=validation, only=["dataset"])
    for role, path in (("train", train), ("validation", validation)):  # as a report written before BLAKE3
        report.fingerprints[role] = fingerprint_file(path, SHA256).model_dump()
    assert not report.fingerprints["train"]["digest"].startswith("blake3:")
    spec = DATA / "spec" / "good.yaml"
    assert not [r for r in stale_reasons(report, spec, train, validation) if "data" in r]
    train.write_text(train.read_text(encoding="utf-8").replace("Paris", "Lyon"), encoding="utf-8")
    assert "the train data (train.jsonl) changed since it was approved" in stale_reasons(report, spec, train, validation)
