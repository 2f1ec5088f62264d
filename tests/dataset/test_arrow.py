"""Arrow files as `save_to_disk` writes them (and Arrow's file format), read row by row like parquet."""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.records import iter_chats, iter_records
from tunegate.errors import UnreadableRecord

pa = pytest.importorskip("pyarrow")
CONFIG_DATA = DATA / "configs" / "data"
SHARD = CONFIG_DATA / "alpaca_saved" / "train" / "data-00000-of-00001.arrow"


def _write_file_format(path, rows):
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def test_a_save_to_disk_shard_reads_as_the_records_it_was_saved_from():
    lines = (CONFIG_DATA / "alpaca_train.jsonl").read_text(encoding="utf-8").splitlines()
    assert [record for _, _, record in iter_records(SHARD)] == [json.loads(line) for line in lines]


def test_a_save_to_disk_shard_passes_the_dataset_stage_as_an_arrow_container():
    result = validate_dataset({"train": SHARD})
    assert result.status == "passed" and result.findings == []
    assert (result.stats["train"]["container"], result.stats["train"]["format"]) == ("arrow", "alpaca")


def test_the_arrow_file_format_is_read_whatever_its_name(tmp_path):
    _write_file_format(tmp_path / "train.feather", [{"prompt": "The sky is", "completion": " blue."},
                                                     {"prompt": "Grass is", "completion": " green."}])
    assert [record["completion"] for _, _, record in iter_records(tmp_path / "train.feather")] == [" blue.", " green."]
    assert validate_dataset({"train": tmp_path / "train.feather"}).stats["train"]["container"] == "arrow"


def test_a_finding_in_an_arrow_row_is_placed_at_its_row(tmp_path):
    _write_file_format(tmp_path / "d.arrow", [{"prompt": "a", "completion": "b"}, {"prompt": "c", "completion": ""}])
    [finding] = validate_dataset({"train": tmp_path / "d.arrow"}).findings
    assert finding.code == "TG207" and finding.place().endswith("d.arrow:row 1")


def test_a_file_named_arrow_that_is_not_one_cannot_be_read(tmp_path):
    (tmp_path / "d.arrow").write_text('{"prompt": "a", "completion": "b"}\n')
    [finding] = validate_dataset({"train": tmp_path / "d.arrow"}).findings
    assert finding.code == "TG274" and "Arrow file cannot be read" in finding.message
    with pytest.raises(UnreadableRecord, match="not a readable arrow file"):
        list(iter_records(tmp_path / "d.arrow", strict=True))


def test_an_arrow_table_without_rows_is_no_dataset(tmp_path):
    schema = pa.schema([("prompt", pa.string()), ("completion", pa.string())])
    with pa.OSFile(str(tmp_path / "d.arrow"), "wb") as sink, pa.ipc.new_stream(sink, schema):
        pass
    [finding] = validate_dataset({"train": tmp_path / "d.arrow"}).findings
    assert finding.code == "TG242" and "Arrow file has no rows" in finding.message


def test_arrow_rows_become_chats():
    [first, *_] = iter_chats(SHARD)
    assert first.messages[0] == {"role": "user", "content": "Convert the temperature to Celsius.\n98.6 F"}


def test_an_empty_file_named_arrow_is_said_to_be_empty(tmp_path):
    (tmp_path / "d.arrow").write_bytes(b"")
    assert [f.code for f in validate_dataset({"train": tmp_path / "d.arrow"}).findings] == ["TG241"]


def _not_utf8_strings() -> object:
    """A string column whose bytes are not UTF-8: what a bit flip or a careless writer leaves (no writer checks)."""
    data, offsets = pa.py_buffer(b"The sky is\xe3("), pa.array([0, 10, 12], type=pa.int32()).buffers()[1]
    prompts = pa.Array.from_buffers(pa.string(), 2, [None, offsets, data])
    return pa.table({"prompt": prompts, "completion": pa.array([" blue.", " green."])})


@pytest.mark.parametrize("name", ["d.arrow", "d.parquet"])
def test_a_string_column_that_is_not_utf8_is_an_unreadable_file_not_a_crash(tmp_path, name):
    table, path = _not_utf8_strings(), tmp_path / name
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    [finding] = validate_dataset({"train": path}).findings
    assert finding.code == "TG274"
    with pytest.raises(UnreadableRecord):
        list(iter_records(path, strict=True))
