"""`read_chats`: a split's chat records, or a uniform sample of them bounded by count and by characters."""
from __future__ import annotations

import json
import statistics

from tests.support.minirun import DATA
from tunegate.dataset.records import read_chats


def varied(tmp_path, n: int = 2000):
    """`n` chats whose sizes cycle 10..400 characters, so a character budget binds early and often."""
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                     {"role": "assistant", "content": "a" * (10 + i % 40 * 10)}]}) + "\n"
                            for i in range(n)))
    return path


def test_a_sample_past_its_character_budget_fits_it_and_says_it_is_a_sample(tmp_path):
    sample = read_chats(varied(tmp_path), limit=1000, seed=0, budget_chars=20_000)
    assert sum(r.char_count() for r in sample.records) <= 20_000
    assert sample.sampled and sample.total == 2000 and len(sample.records) > 20


def test_a_sample_cut_to_its_budget_is_still_uniform_over_the_file_and_repeatable(tmp_path):
    path = varied(tmp_path)
    sample = read_chats(path, limit=1000, seed=0, budget_chars=20_000)
    indices = [r.index for r in sample.records]
    assert indices == sorted(indices) and indices == [r.index for r in read_chats(path, limit=1000, seed=0,
                                                                                      budget_chars=20_000).records]
    # a uniform draw from 0..1999 has its mean near 1000 and both halves alike, not the file's start
    assert 800 < statistics.mean(indices) < 1200
    assert abs(sum(i < 1000 for i in indices) - sum(i >= 1000 for i in indices)) < len(indices) / 3


def test_a_budget_that_never_binds_leaves_the_sample_as_it_was():
    plain = read_chats(DATA / "train.jsonl", limit=5, seed=3)
    budgeted = read_chats(DATA / "train.jsonl", limit=5, seed=3, budget_chars=10**9)
    assert [r.index for r in budgeted.records] == [r.index for r in plain.records]
    assert (budgeted.total, budgeted.sampled) == (plain.total, plain.sampled)


def test_one_record_larger_than_the_budget_is_still_kept(tmp_path):
    sample = read_chats(varied(tmp_path, 3), budget_chars=5)
    assert len(sample.records) == 1 and sample.sampled
