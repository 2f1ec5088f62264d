"""The strict reader's other containers: a `.json` file holding one array, and parquet.

`JsonlReader.records()` hands the opened stream here when the file is one of these, so every
container gets the same findings, the same record indexes and the same observers. A `.json`
element's place is the line and column where it starts (a finding inside it is shifted to its own
line); a parquet row's place is its row index (line 0, shown as `file:row N`).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from tunegate.dataset import json_array, parquet_rows
from tunegate.dataset.json_line import diagnose, non_object, shift
from tunegate.errors import BrokenContainer, MissingDependency

_BREAK_CODES = {"utf8": "TG221", "depth": "TG224", "size": "TG228"}


class _Shifted:
    """A findings sink that moves a column inside a multi-line element to its own line."""

    def __init__(self, reader: Any, raw: bytes):
        self.reader, self.raw = reader, raw

    def error(self, code: str, message: str, hint: str, line: int | None = None,
              column: int | None = None, record: int | None = None) -> None:
        if line is not None and column is not None:
            line, column = shift(self.raw, line, column)
        self.reader.error(code, message, hint, line=line, column=column, record=record)


def array_records(reader: Any, stream: BinaryIO) -> Iterator[tuple[int, int, bytes, dict]]:
    """Yield (line, index, raw, record) for each element of the array; report what breaks."""
    index = last = 0
    try:
        for line, column, text in json_array.elements(stream, reader.max_line_bytes):
            last = line
            # Pad to the element's column, so columns located in `raw` are the file's own.
            raw = (" " * (column - 1) + text).encode("utf-8")
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                diagnose(raw, exc, _Shifted(reader, raw), line, index)
                index += 1
                continue
            if type(record) is dict:
                yield line, index, raw, record
            else:
                non_object(record, reader, line, index)
            index += 1
    except BrokenContainer as exc:
        last = exc.line or last
        reader.error(_BREAK_CODES.get(exc.kind, "TG220"), f"{exc}; the array cannot be read past this point",
                     "Fix the JSON at this place (`python -m json.tool FILE` shows the same error); every "
                     "element after a break is unreadable.", line=exc.line, column=exc.column, record=index)
    finally:
        reader.lines, reader.records_seen = last, index


def parquet_records(reader: Any) -> Iterator[tuple[int, int, bytes, dict]]:
    """Yield (0, row index, raw, row) for each row of a parquet file; report why it cannot be read."""
    index = 0
    try:
        for index, row in parquet_rows.rows(reader.path):  # noqa: B007 (index is the count afterwards)
            yield 0, index, orjson.dumps(row, default=str), row
            index += 1
    except MissingDependency as exc:
        reader.unreadable = True
        reader.error("TG273", f"reading parquet needs pyarrow: {exc}", "Install the extra: pip install "
                     "'tunegate[parquet]', or convert the file to JSONL.", line=1, column=1)
    except BrokenContainer as exc:
        reader.unreadable = True
        reader.error("TG274", f"the parquet file cannot be read after row {index}: {exc}",
                     "Re-download or re-export the file; `python -c \"import pyarrow.parquet as pq; "
                     "pq.read_table('FILE')\"` shows the same error.",
                     **({"record": index} if index else {"line": 1, "column": 1}))
    finally:
        reader.lines = reader.records_seen = index
