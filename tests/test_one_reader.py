"""Every stage reads the same records: a gzip file named train.jsonl counts the same everywhere.

Before there was one reader, such a file passed the dataset and overlap stages, was estimated at 0
tokens (0.0 h, $0), and the mini-run rejected it: "none of the 0 training records read has
trainable tokens" (TG501).
"""
from __future__ import annotations

import gzip
import shutil

import pytest

from tunegate.dataset.fingerprint import fingerprint_file
from tunegate.dataset.records import iter_chats, iter_records
from tunegate.gate import check


@pytest.fixture
def gzipped(workdir):
    """The flows test data with train.jsonl replaced by its gzip, under the same name."""
    plain = (workdir / "train.jsonl").read_bytes()
    (workdir / "train.jsonl").write_bytes(gzip.compress(plain))
    shutil.copyfile(workdir / "train.jsonl", workdir / "train.jsonl.gz")
    return workdir


def test_the_lenient_reader_reads_gzip_by_its_magic_bytes_not_its_name(gzipped):
    assert sum(1 for _ in iter_records(gzipped / "train.jsonl")) == 85
    assert sum(1 for _ in iter_chats(gzipped / "train.jsonl")) == 85
    assert fingerprint_file(gzipped / "train.jsonl") == fingerprint_file(gzipped / "train.jsonl.gz").model_copy(
        update={"file": str(gzipped / "train.jsonl")})


def test_the_static_stages_count_the_same_records_and_the_estimate_sees_their_text(gzipped):
    report = check(gzipped / "good.yaml")
    assert report.gates_passed, [f.message for f in report.findings]
    assert report.stage("dataset").stats["train"]["records"] == 85
    assert report.stage("dataset").stats["train"]["gzip"] is True
    assert report.stage("overlap").stats["train"]["records"] == 85
    assert report.fingerprints["train"]["records"] == 85
    assert report.facts.content["train"].records == 85
    assert report.facts.estimate["tokens"]["per_epoch"] == report.facts.content["train"].content_chars // 4 > 0


@pytest.mark.slow
def test_the_mini_run_tokenises_every_record_the_dataset_stage_read(gzipped, tiny_cache):
    report = check(gzipped / "good.yaml", mini_run=True)
    assert report.stage("mini-run").status == "passed", [f.message for f in report.findings]
    assert report.stage("mini-run").stats["token_audit"]["train"]["records"] == 85
    assert report.facts.tokens.records == 85
