"""A sweep's candidates tokenise their data once (tunegate.fullrun.token_cache).

The first trainer keeps the encoded splits and the lines it logged; a later one with the same data,
tokenizer and settings reads them back: the same records, token for token, the same train.log. Data
edited in between, another max_seq_len, or a copy that does not read back whole are encoded again.
On the tiny model and tests/data/minirun's records, copied where a test edits them.
"""
from __future__ import annotations

import shutil

import pytest

from tests.support.minirun import DATA, load_spec
from tunegate.fullrun import token_cache
from tunegate.fullrun.data import load_splits
from tunegate.fullrun.token_cache import KEEP, KEPT_TOKENS, cached_splits
from tunegate.training.tokenizer import prepare_tokenizer

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


@pytest.fixture
def data_copy(tmp_path):
    """A spec whose files are copies the test may edit."""
    for name in ("train.jsonl", "validation.jsonl"):
        shutil.copy(DATA / name, tmp_path / name)
    return load_spec("good", **{"data.train": tmp_path / "train.jsonl",
                                "data.validation": tmp_path / "validation.jsonl"})


@pytest.fixture
def encodings(monkeypatch):
    """How many times the splits were encoded (load_splits called) through the cache."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return load_splits(*args, **kwargs)

    monkeypatch.setattr(token_cache, "load_splits", counted)
    return calls


def _read(folder, spec):
    prepared = prepare_tokenizer(spec)
    lines = []
    return cached_splits(folder, spec, prepared.path, prepared.tokenizer, lines.append), lines


def test_a_later_trainer_reads_the_same_records_and_log_lines_without_encoding(tiny_cache, data_copy, tmp_path,
                                                                              encodings):
    first, first_lines = _read(tmp_path / "tokens", data_copy)
    again, again_lines = _read(tmp_path / "tokens", data_copy)
    prepared = prepare_tokenizer(data_copy)
    fresh = load_splits(data_copy, prepared.tokenizer, lambda line: None)
    assert len(encodings) == 1
    assert again == first == fresh  # every record's ids, labels, lengths and cut tokens
    assert again_lines == [KEPT_TOKENS, *first_lines] and any(line.startswith("train: ") for line in first_lines)


def test_an_edited_data_file_is_encoded_again(tiny_cache, data_copy, tmp_path, encodings):
    before, _ = _read(tmp_path / "tokens", data_copy)
    train = data_copy.data.train
    lines = train.read_text(encoding="utf-8").splitlines(keepends=True)
    train.write_text("".join(lines[:-1]), encoding="utf-8")  # one record fewer
    after, _ = _read(tmp_path / "tokens", data_copy)
    assert len(encodings) == 2 and len(after.train) == len(before.train) - 1


def test_another_max_seq_len_is_encoded_again(tiny_cache, data_copy, tmp_path, encodings):
    long, _ = _read(tmp_path / "tokens", data_copy)
    short, _ = _read(tmp_path / "tokens", data_copy.model_copy(
        update={"training": data_copy.training.model_copy(update={"max_seq_len": 64})}))
    assert len(encodings) == 2
    assert max(len(c.input_ids) for c in short.train) <= 64 < max(len(c.input_ids) for c in long.train)


def test_a_copy_that_does_not_read_back_whole_is_encoded_again(tiny_cache, data_copy, tmp_path, encodings):
    folder = tmp_path / "tokens"
    first, _ = _read(folder, data_copy)
    (kept,) = folder.glob("*.json")
    kept.write_bytes(kept.read_bytes()[:-100])  # cut short
    again, _ = _read(folder, data_copy)
    assert len(encodings) == 2 and again == first


def test_the_folder_keeps_the_most_recent_copies(tiny_cache, data_copy, tmp_path):
    folder = tmp_path / "tokens"
    for length in range(64, 64 + 8 * (KEEP + 2), 8):
        _read(folder, data_copy.model_copy(update={"training": data_copy.training.model_copy(
            update={"max_seq_len": length})}))
    assert len(list(folder.glob("*.json"))) == KEEP
