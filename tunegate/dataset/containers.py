"""The strict reader's other containers: a `.json` file holding one array, and parquet.

`JsonlReader.records()` hands the opened stream here when the file is one of these, so every
container gets the same findings, the same record indexes and the same observers. A `.json`
element's place is the line and column where it starts (a finding inside it is shifted to its own
line); a parquet row's place is its row index (line 0, shown as `file:row N`).
"""
from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from tunegate.dataset import json_array, parquet_rows
from tunegate.dataset.json_line import diagnose, non_object, shift
from tunegate.errors import BrokenContainer, DecompressionBomb, MissingDependency
from tunegate.report import Finding

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
    """Yield (line, index, raw, record) for each element of the array; report what breaks.

    `raw` is the element's own text: the checks place their findings in it, and the findings on
    its first line are then moved right by the column it starts at. (Padding `raw` to that column
    instead made a one-line array of n records cost n x its length: 350 s for 100,000 records.)
    """
    index = last = 0
    kept = reader.out.kept
    try:
        for line, column, text in json_array.elements(stream, reader.max_line_bytes):
            last = line
            raw = text.encode("utf-8")
            mark = len(kept)
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                diagnose(raw, exc, _Shifted(reader, raw), line, index)
                _move_right(kept, mark, line, column - 1)
                index += 1
                continue
            if type(record) is dict:
                yield line, index, raw, record  # the checks of this element run before the next step
                _move_right(kept, mark, line, column - 1)
            else:
                non_object(record, reader, line, index)
            index += 1
    except BrokenContainer as exc:
        last = exc.line or last
        reader.error(_BREAK_CODES.get(exc.kind, "TG220"), f"{exc}; the array cannot be read past this point",
                     "Fix the JSON at this place (`python -m json.tool FILE` shows the same error); every "
                     "element after a break is unreadable.", line=exc.line, column=exc.column, record=index)
    except DecompressionBomb as exc:
        reader.error("TG247", f"{exc}; reading stopped in the element at line {last} ({exc.inflated:,} bytes "
                     "inflated)", "Check the file: `gzip -l FILE` shows its sizes. Real data inflates 3-10x; "
                     "if it is data, store it uncompressed.", line=last or 1, column=1)
    except (OSError, EOFError, zlib.error) as exc:  # a corrupt or truncated gzip stream, a failing disk
        reader.read_failed(last, exc)
    finally:
        reader.lines, reader.records_seen = last, index


def _move_right(kept: list[Finding], mark: int, line: int, by: int) -> None:
    """Findings kept since `mark` on `line` (the element's first), their columns moved right `by`."""
    if not by:
        return
    for i in range(mark, len(kept)):
        f = kept[i]
        if f.line == line and f.column is not None:
            kept[i] = f.model_copy(update={"column": f.column + by})


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
