"""The strict reader's other containers: a `.json` file holding one array, parquet, Arrow, and CSV.

`JsonlReader.records()` hands the opened stream here when the file is one of these, so every
container gets the same findings, the same record indexes and the same observers. A `.json`
element's place is the line and column where it starts (a finding inside it is shifted to its own
line); a parquet or Arrow row's place is its row index (line 0, shown as `file:row N`); a CSV row's is the
line it starts on, without a column (a finding's column would be one in the JSON the row becomes).
"""
from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from tunegate.dataset import arrow_rows, csv_rows, json_array, parquet_rows
from tunegate.dataset.json_line import INVALID_JSON, diagnose, non_object, shift
from tunegate.errors import BrokenContainer, DecompressionBomb, MissingDependency
from tunegate.report import Finding

_BOMB = ("Check the file: `gzip -l FILE` shows its sizes. Real data inflates 3-10x; if it is data, store it "
         "uncompressed.")


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
                reader.column = column  # a repeat found after the read (tunegate.dataset.repeats) starts here
                yield line, index, raw, record  # the checks of this element run before the next step
                _move_right(kept, mark, line, column - 1)
            else:
                non_object(record, reader, line, index)
            index += 1
    except BrokenContainer as exc:
        last = exc.line or last
        reader.broken(exc, INVALID_JSON, f"{exc}; the array cannot be read past this point", "Fix the JSON at this "
                      "place (`python -m json.tool FILE` shows the same error); every element after a break is "
                      "unreadable.", record=index)
    except DecompressionBomb as exc:
        reader.stopped_inflating(exc, f"in the element at line {last}", last or 1, _BOMB)
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
    return _table_records(reader, parquet_rows.rows, "parquet", "import pyarrow.parquet as pq; pq.read_table('FILE')")


def arrow_records(reader: Any) -> Iterator[tuple[int, int, bytes, dict]]:
    """Yield (0, row index, raw, row) for each row of an Arrow file (`save_to_disk`); report why it cannot be read."""
    return _table_records(reader, arrow_rows.rows, "Arrow", "import datasets; datasets.load_from_disk('FOLDER')")


def _table_records(reader: Any, rows: Any, what: str, probe: str) -> Iterator[tuple[int, int, bytes, dict]]:
    index = 0
    try:
        for index, row in rows(reader.path):  # noqa: B007 (index is the count afterwards)
            yield 0, index, orjson.dumps(row, default=str), row
            index += 1
    except MissingDependency as exc:
        reader.unreadable = True
        reader.error("TG273", f"reading {what} needs pyarrow: {exc}", "Install the extra: pip install "
                     "'tunegate[parquet]', or convert the file to JSONL.", line=1, column=1)
    except BrokenContainer as exc:
        reader.unreadable = True
        reader.error("TG274", f"the {what} file cannot be read after row {index}: {exc}",
                     f"Re-download or re-export the file; `python -c \"{probe}\"` shows the same error.",
                     **({"record": index} if index else {"line": 1, "column": 1}))
    finally:
        reader.lines = reader.records_seen = index


def csv_records(reader: Any, stream: BinaryIO) -> Iterator[tuple[int, int, bytes, dict]]:
    """Yield (line, index, raw, record) for each row of a CSV file (`tunegate.dataset.csv_rows`); report
    its header's repeated names, rows with too many fields, text pandas reads as missing, and where it breaks."""
    table = csv_rows.CsvTable(stream, reader.max_line_bytes, csv_rows.separator(reader.path.name))
    kept = reader.out.kept
    index = line = 0
    try:
        for row in table.rows():
            if index == 0:
                _header_findings(reader, table)
            line, index = row.line, row.index + 1
            if row.record is None:
                width = len(table.columns)
                extra = row.fields - width
                what = (f"reads its first {extra} field(s) as the row's index and every column shifts" if row.index == 0
                        else f"stops the load here (\"Expected {width} fields in line {line}, saw {row.fields}\"), "
                        "or shifts every column when the first row is as wide")
                reader.error("TG275", f"the row has {row.fields} fields, the header {width}: pandas (datasets' CSV "
                             f"loader) {what}", "Quote every field that holds the separator (\"a, b\"), as "
                             "csv.writer and DataFrame.to_csv do, or give the header the missing column names.",
                             line=line, record=row.index)
                continue
            for name, text in row.read_as_missing:
                reader.out.add("TG277", "warning", f"{name} is {text!r}, which pandas (datasets' CSV loader) reads "
                               "as missing: the record is checked and trained without it",
                               f"Leave the field empty if it is meant to be missing; if {text!r} is the text, "
                               "store the data as JSONL or parquet, where text stays text.",
                               file=reader.file, line=line, record=row.index)
            mark = len(kept)
            yield line, row.index, orjson.dumps(row.record) + b"\n", row.record
            _drop_columns(kept, mark, line)
        if index == 0:
            _header_findings(reader, table)
    except BrokenContainer as exc:
        reader.unreadable = True  # what follows is unread, not absent: no "no rows" besides
        reader.broken(exc, "TG276", f"{exc}; the CSV cannot be read past this point",
                      _CSV_FIXES.get(exc.kind, _CSV_FIXES["csv"]), record=index)
    except DecompressionBomb as exc:
        reader.unreadable = True
        reader.stopped_inflating(exc, f"after line {table.lines.count}", table.lines.count or 1, _BOMB)
    except (OSError, EOFError, zlib.error) as exc:
        reader.unreadable = True
        reader.read_failed(table.lines.count, exc)
    finally:
        reader.lines, reader.records_seen = table.lines.count, index
        reader.csv_header = bool(table.columns)


_CSV_FIXES = {
    "utf8": "Save the file as UTF-8 (Excel: \"CSV UTF-8\"), or convert it: `iconv -f cp1252 -t utf-8 FILE`.",
    "size": "A field this long is no training text; check the quoting before it, or store the data as JSONL.",
    "csv": "Close the quote (a quote inside a quoted field is written twice: \"\"), or write the file again "
           "with csv.writer or DataFrame.to_csv.",
}


def _header_findings(reader: Any, table: csv_rows.CsvTable) -> None:
    """The header's own problems: another separator than the comma, repeated column names."""
    names = {",": "commas", "\t": "tabs", ";": "semicolons", "|": "pipes"}
    found = next((s for s in names if s != table.sep and len(table.columns) == 1 and s in table.columns[0]), None)
    if found:
        own, suffix = names[table.sep], ".tsv" if table.sep == "\t" else ".csv"
        reader.error("TG279", f"the header is one column, {table.columns[0][:80]!r}: the file is separated by "
                     f"{names[found]}, and load_dataset reads a {suffix} file split on {own} only",
                     f"Write the file with {own} (DataFrame.to_csv's sep=; Excel: \"CSV UTF-8 (Comma delimited)\"), "
                     f"name it for its separator (.csv: commas, .tsv: tabs), or store it as JSONL.",
                     line=table.header_line, column=1)
    for name, numbers in table.duplicates.items():
        reader.error("TG278", f"columns {', '.join(map(str, numbers))} have the same name {name!r}: pandas (datasets' "
                     f"CSV loader) reads the second as {name + '.1'!r}, so only the first is read as {name!r}",
                     "Give each column its own name, or drop the repeated one.", line=table.header_line,
                     column=None)


def _drop_columns(kept: list[Finding], mark: int, line: int) -> None:
    """Findings kept since `mark` on a CSV row's `line` lose the column they got in the row's JSON."""
    for i in range(mark, len(kept)):
        f = kept[i]
        if f.line == line and f.column is not None:
            kept[i] = f.model_copy(update={"column": None})
