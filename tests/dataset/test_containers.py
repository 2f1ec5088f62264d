"""A `.json` array read element by element, and parquet row by row: places a user can find, bounded memory."""
from __future__ import annotations

import gzip
import json
import sys
import time
import tracemalloc
from decimal import Decimal

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.fingerprint import fingerprint_file
from tunegate.dataset.records import iter_chats, iter_records

FORMATS = DATA / "formats"


def test_each_element_of_a_pretty_printed_array_starts_at_its_own_line():
    lines = [line for line, _, _ in iter_records(FORMATS / "good" / "alpaca.json")]
    text = (FORMATS / "good" / "alpaca.json").read_text().splitlines()
    assert [text[n - 1].strip() for n in lines] == ["{", "{", "{"] and lines[0] == 2


def test_an_array_that_breaks_is_reported_where_it_breaks_and_not_read_past_it():
    result = validate_dataset({"train": FORMATS / "bad" / "alpaca_missing_comma.json"})
    assert [(f.code, f.line) for f in result.findings] == [("TG220", 7)]
    assert result.stats["train"]["records"] == 1


def test_a_trailing_comma_and_text_after_the_array_are_errors(tmp_path):
    for body, words in ((b'[{"prompt": "a", "completion": "b"},\n]', "trailing comma"),
                        (b'[{"prompt": "a", "completion": "b"}]\n{"x": 1}', "after the array")):
        (tmp_path / "d.json").write_bytes(body)
        [finding] = validate_dataset({"train": tmp_path / "d.json"}).findings
        assert finding.code == "TG220" and words in finding.message


def test_a_large_array_is_read_in_bounded_memory(tmp_path):
    record = {"instruction": "Summarise the report. " * 20, "input": "", "output": "A short summary. " * 60}
    path = tmp_path / "big.json"
    with path.open("w") as f:  # ~16 MB, indented as LLaMA-Factory writes it
        f.write("[\n" + ",\n".join(json.dumps(record, indent=2) for _ in range(12000)) + "\n]\n")
    tracemalloc.start()
    count = sum(1 for _ in iter_chats(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 12000 and path.stat().st_size > 15e6
    assert peak < 12e6  # the file is never held whole (a text window and one element at a time)


def test_a_parquet_row_is_placed_by_its_row_index():
    [finding] = validate_dataset({"train": FORMATS / "bad" / "alpaca_empty_output.parquet"}).findings
    assert (finding.line, finding.record, finding.place()) == (
        None, 3, f"{FORMATS / 'bad' / 'alpaca_empty_output.parquet'}:row 3")


def test_parquet_without_pyarrow_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    [finding] = validate_dataset({"train": FORMATS / "good" / "sharegpt.parquet"}).findings
    assert finding.code == "TG273" and "pip install 'tunegate[parquet]'" in finding.hint


def test_a_json_file_holding_an_empty_array_is_an_array_with_no_records_not_an_empty_file(tmp_path):
    for body in (b"[]", b"[ ]\n", b"\n  [\n\n  ]\r\n"):
        (tmp_path / "train.json").write_bytes(body)
        [finding] = validate_dataset({"train": tmp_path / "train.json"}).findings
        assert finding.code == "TG242" and finding.message == "the file holds a JSON array with no records"
        assert "empty file" not in finding.message and "[{" in finding.hint


def test_a_gzipped_empty_array_is_read_as_the_array_it_holds(tmp_path):
    (tmp_path / "train.json.gz").write_bytes(gzip.compress(b"[\n]\n"))
    [finding] = validate_dataset({"train": tmp_path / "train.json.gz"}).findings
    assert finding.code == "TG242" and finding.message == "the file holds a JSON array with no records"


def test_a_json_file_of_zero_bytes_is_still_the_empty_file(tmp_path):
    (tmp_path / "train.json").write_bytes(b"")
    [finding] = validate_dataset({"train": tmp_path / "train.json"}).findings
    assert (finding.code, finding.message) == ("TG241", "the file is empty")


def test_a_json_file_holding_one_empty_object_is_a_record_of_no_format_not_an_empty_file(tmp_path):
    (tmp_path / "train.json").write_bytes(b"{}\n")
    result = validate_dataset({"train": tmp_path / "train.json"})
    assert [f.code for f in result.findings] == ["TG200"] and result.stats["train"]["records"] == 1


def test_a_parquet_file_with_no_rows_is_a_table_with_no_records_not_an_empty_file(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"instruction": pa.array([], pa.string()), "output": pa.array([], pa.string())}),
                   tmp_path / "train.parquet")
    [finding] = validate_dataset({"train": tmp_path / "train.parquet"}).findings
    assert finding.code == "TG242" and finding.message == "the parquet file has no rows"


def test_parquet_values_json_has_no_type_for_are_read_as_their_json_form():
    rows = [r for _, _, r in iter_records(FORMATS / "good" / "openai_typed_columns.parquet")]
    assert [r["created"] for r in rows[:2]] == ["2026-01-01T09:30:00+00:00", "2026-01-02T09:30:00.250000+00:00"]
    assert [r.get("handled_in") for r in rows] == ["P0DT1H30M0.5S", "P0DT0H0M0S", "P2DT0H0M0.000007S", None]
    assert rows[0]["day"] == "2026-01-01"
    assert [r.get("rating") for r in rows] == [0.9, 4, Decimal("0.1234567890123456789012345678901"), None]
    assert type(rows[1]["rating"]) is int  # a whole decimal is what JSON reads back: 4, not 4.0
    # binary that is not UTF-8 stays bytes (hashed and converted as base64); b"" decodes, to ""
    assert [r.get("thumbnail") for r in rows] == [b"\x89PNG\r\n\x1a\n\x00\x00", None, b"\xff\xd8\xff\xe0", ""]


def test_text_stored_as_plain_binary_in_parquet_is_read_as_text():
    [first, *_] = iter_chats(FORMATS / "good" / "sharegpt_binary_text.parquet")
    assert first.messages[1] == {"role": "assistant", "content": "Merci — danke — ありがとう"}


def test_a_parquet_file_with_typed_columns_is_fingerprinted_and_passes_the_dataset_stage():
    path = FORMATS / "good" / "openai_typed_columns.parquet"
    assert fingerprint_file(path).records == 4
    assert validate_dataset({"train": path}).findings == []


def test_a_finding_in_a_one_line_array_is_placed_at_the_files_own_column(tmp_path):
    good = '{"instruction": "Say hi.", "output": "Hi."}'
    third = {"instruction": "Say hi.", "output": ""}
    (tmp_path / "alpaca.json").write_text(f"[{good}, {good.replace('Say', 'Wave')}, {json.dumps(third)}]")
    [finding] = validate_dataset({"train": tmp_path / "alpaca.json"}).findings
    at = (tmp_path / "alpaca.json").read_text().index('""}') + 1  # the empty value
    assert (finding.code, finding.line, finding.column, finding.record) == ("TG207", 1, at, 2)


def test_a_one_line_array_is_read_in_time_linear_in_its_records(tmp_path):
    record = json.dumps({"instruction": "Name a colour.", "output": "Teal."})
    (tmp_path / "alpaca.json").write_text("[" + ", ".join([record] * 100_000) + "]")  # json.dump's own layout
    start = time.perf_counter()
    result = validate_dataset({"train": tmp_path / "alpaca.json"})
    assert result.stats["train"]["records"] == 100_000
    assert time.perf_counter() - start < 60  # a hang guard: padding each element to its column took 350 s
