"""Characters for an estimate made without the dataset stage: a small file exact, a large one sampled
with its error stated, and the sample's figure within that error of the exact count (issue 36)."""
from __future__ import annotations

import gzip

import pytest

from tests.support.paths import DATA
from tunegate.dataset.records import iter_chats, message_chars
from tunegate.estimate import characters, sampling
from tunegate.estimate.characters import count_characters

# LLaMA-Factory's published alpaca_en_demo (60 records, 54 KB; its source in tests/data/configs/published)
REAL = DATA / "configs" / "published" / "data" / "alpaca_en_demo_train.jsonl"


@pytest.fixture
def small_sample(monkeypatch):
    """Sizes scaled down so a real 54 KB file is sampled as a large one is: 8 windows of 2 KiB."""
    monkeypatch.setattr(characters, "WHOLE_BYTES", 0)
    monkeypatch.setattr(characters, "WHOLE_GZIP_BYTES", 0)
    monkeypatch.setattr(sampling, "WINDOWS", 8)
    monkeypatch.setattr(sampling, "WINDOW_BYTES", 2048)


def exact(path):
    return message_chars(path), sum(1 for _ in iter_chats(path))


def test_a_small_file_is_read_whole_and_its_count_is_exact_with_no_sample():
    counted = count_characters(DATA / "flows" / "train.jsonl")
    assert (counted.chars, counted.records) == exact(DATA / "flows" / "train.jsonl")
    assert counted.sample is None


def test_a_sampled_plain_file_lands_within_its_stated_error_of_the_exact_count(small_sample):
    counted = count_characters(REAL)
    chars, records = exact(REAL)
    assert counted.sample is not None and counted.sample.how == "windows spread over the file"
    assert abs(counted.chars - chars) <= chars * counted.sample.error_pct / 100, (counted, chars)
    assert counted.sample.records_read < records


def test_a_sampled_gzip_lands_within_its_stated_error_of_the_exact_count(small_sample, tmp_path):
    packed = tmp_path / "alpaca_en_demo_train.jsonl.gz"
    packed.write_bytes(gzip.compress(REAL.read_bytes()))
    counted = count_characters(packed)
    chars, _ = exact(REAL)
    assert counted.sample is not None
    assert abs(counted.chars - chars) <= chars * counted.sample.error_pct / 100, (counted, chars)


def test_the_statement_names_the_sample_the_records_and_the_error(small_sample):
    text = count_characters(REAL).sample.statement()
    assert text.startswith("estimated from a sample of ") and " of about " in text and text.endswith(" %")


SHARD = DATA / "configs" / "data" / "pc_parquet_shards" / "data" / "train-00000-of-00002.parquet"  # 20 rows


def test_a_parquet_file_of_few_rows_is_read_whole_and_exact():
    counted = count_characters(SHARD)
    assert (counted.chars, counted.records) == exact(SHARD) and counted.sample is None


def test_a_parquet_file_past_the_rows_read_is_scaled_by_its_footers_row_count(monkeypatch):
    monkeypatch.setattr(sampling, "PREFIX_RECORDS", 10)
    counted = count_characters(SHARD)
    chars, records = exact(SHARD)
    assert counted.sample.records_read == 10 and counted.sample.records_estimated == records == 20
    assert abs(counted.chars - chars) <= chars * counted.sample.error_pct / 100, (counted, chars)


def test_a_sampled_csv_file_reads_each_window_under_its_header(small_sample, tmp_path):
    rows = tmp_path / "alpaca.csv"
    rows.write_text("instruction,input,output\n" + "".join(f"do thing {i} {'x' * (i % 50)},,done {i * 3}\n"
                                                          for i in range(2_000)))
    counted = count_characters(rows)
    chars, records = exact(rows)
    assert counted.sample is not None and counted.sample.how == "windows spread over the file"
    assert abs(counted.chars - chars) <= chars * counted.sample.error_pct / 100, (counted, chars)


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_gzip_that_breaks_off_is_sampled_up_to_the_break_not_a_crash(small_sample, tmp_path, damage):
    packed = gzip.compress(REAL.read_bytes())
    half = len(packed) // 2
    broken = packed[:half] if damage == "truncated" else packed[:half] + bytes(range(256)) * 4 + packed[half:]
    (tmp_path / "train.jsonl.gz").write_bytes(broken)
    counted = count_characters(tmp_path / "train.jsonl.gz")  # an EOFError or zlib.error (exit 3) before
    assert counted.chars < message_chars(REAL)  # what could be read before the break
