"""CSV files (`.csv`, `.csv.gz`; `.tsv` with tabs), read as Hugging Face `datasets` reads them: pandas.read_csv.

    table = CsvTable(stream, max_line_bytes)
    for row in table.rows():          # row.line, row.index, row.record (None: too many fields)
        ...

axolotl (`ds_type: csv`, or a path ending in .csv), TRL and LLaMA-Factory load a CSV file with
`load_dataset("csv")`, whose builder passes pandas.read_csv its defaults. What that means, and what
this module therefore decides (docs/formats.md "Containers", docs/checks.md TG275-TG279):
- The first row names the columns; each later row is a record whose place is the line it starts
  on (a quoted field may hold newlines). Blank lines, and lines of only spaces and tabs, are
  skipped, as pandas skips them; a line `""` is a row whose fields are all missing.
- Every field is text. An empty field, and pandas' default missing-value strings (`NA`, `N/A`,
  `null`, `None`, `nan`, ...: `keep_default_na`), read as null, so they are left out of the record;
  a non-empty one is said (TG277), because a reply that is literally "None" vanishes in training.
- A row with fewer fields than the header has the rest missing (pandas fills them with NaN); one
  with more is an error (pandas stops the whole load: "Expected 3 fields in line 7, saw 4", or on
  the first row silently takes the first column as the index and shifts every other one).
- Two columns of the same name are an error (pandas renames the second `output.1`, so it is not
  read as the field its header names); an empty name becomes pandas' `Unnamed: N`.
- A quoted field still open at the end of the file is an error (pandas: "EOF inside string").
- A UTF-8 BOM is skipped (Excel writes one, pandas skips it); other bytes that are not UTF-8 stop
  the read at their line and column.
Numbers stay text: pandas types a column that holds only numbers as numbers, which the text
fields of a fine-tuning dataset are not in practice.
"""
from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from tunegate.errors import BrokenContainer

# pandas._libs.parsers.STR_NA_VALUES (pandas 3.1), the strings read_csv reads as missing by default.
PANDAS_NA = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
    "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
_BLANK = " \t\r\n"


def separator(name: str) -> str:
    """The field separator `load_dataset` reads the file with: a tab for `.tsv` (its `sep="\\t"`), else a comma."""
    return "\t" if name.lower().removesuffix(".gz").endswith(".tsv") else ","


@dataclass(frozen=True)
class CsvRow:
    line: int  # the physical line the row starts on
    index: int  # 0-based, among the rows after the header
    record: dict[str, str] | None  # None when the row has more fields than the header
    fields: int
    read_as_missing: tuple[tuple[str, str], ...] = ()  # (column, text) pandas reads as null


class _Lines:
    """The stream's lines as text for csv.reader, counting them, failing at the first that is not UTF-8."""

    def __init__(self, stream: BinaryIO, max_line_bytes: int):
        self.readline, self.limit = stream.readline, max_line_bytes + 1
        self.count = 0
        self.last = ""  # the last line read
        self.ended = False  # csv.reader asked past the last line

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        raw = self.readline(self.limit)
        if not raw:
            self.ended = True
            raise StopIteration
        self.count += 1
        if len(raw) == self.limit and raw[-1] != 10:
            raise BrokenContainer("size", f"line {self.count} is longer than {self.limit - 1:,} bytes",
                                  self.count, 1)
        try:
            self.last = raw.decode("utf-8")
            return self.last
        except UnicodeDecodeError as exc:
            raise BrokenContainer("utf8", f"invalid UTF-8 (byte 0x{raw[exc.start]:02x})", self.count,
                                  len(raw[:exc.start].decode("utf-8")) + 1) from None


class CsvTable:
    """One CSV file's header and rows. `columns` and `duplicates` (the header's repeated names, each
    with its 1-based column numbers) are known once `rows()` has yielded its first row or ended."""

    def __init__(self, stream: BinaryIO, max_line_bytes: int, sep: str = ","):
        self.lines = _Lines(stream, max_line_bytes)
        self.sep = sep
        self.columns: list[str] = []
        self.duplicates: dict[str, list[int]] = {}
        self.header_line = 0
        if csv.field_size_limit() < max_line_bytes:  # a field may be as long as a record may
            csv.field_size_limit(max_line_bytes)

    def rows(self) -> Iterator[CsvRow]:
        """Each row after the header. BrokenContainer where the file cannot be read on (not UTF-8, a
        line over the limit, a quoted field never closed)."""
        reader = csv.reader(self.lines, delimiter=self.sep)  # the excel dialect: pandas' quotechar, doublequote
        index = 0
        while True:
            start = self.lines.count + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                why = ("a line ends in a bare carriage return (\\r, classic Mac line endings) outside quotes"
                       if "new-line character" in str(exc) else str(exc))
                raise BrokenContainer("csv", f"the CSV cannot be read: {why}", self.lines.count, None) from None
            if self.lines.ended:  # the reader went past the end inside a quoted field
                raise BrokenContainer("quote", f"a quoted field opened in the row at line {start} is never "
                                      "closed (pandas: \"EOF inside string\")", start, None)
            if not fields or (len(fields) == 1 and self.lines.count == start and not self.lines.last.strip(_BLANK)):
                continue  # a blank line, or one of only spaces and tabs: pandas skips both (`""` is a row)
            if not self.columns:
                self._header(fields, start)
                continue
            yield self._row(fields, start, index)
            index += 1

    def _header(self, fields: list[str], line: int) -> None:
        self.header_line = line
        seen: dict[str, list[int]] = {}
        for number, name in enumerate(fields, 1):
            seen.setdefault(name, []).append(number)
        self.duplicates = {name: at for name, at in seen.items() if len(at) > 1 and name}
        self.columns = _pandas_names(fields)

    def _row(self, fields: list[str], line: int, index: int) -> CsvRow:
        if len(fields) > len(self.columns):
            return CsvRow(line, index, None, len(fields))
        record: dict[str, Any] = {}
        missing: list[tuple[str, str]] = []
        for name, text in zip(self.columns, fields):
            if text in PANDAS_NA:
                if text:
                    missing.append((name, text))
            else:
                record[name] = text
        return CsvRow(line, index, record, len(fields), tuple(missing))


def _pandas_names(fields: list[str]) -> list[str]:
    """The column names pandas gives the header: `Unnamed: N` for an empty one, `name.1` for a repeat."""
    names: list[str] = []
    taken: set[str] = set()
    for number, name in enumerate(fields):
        name = name or f"Unnamed: {number}"
        base, k = name, 0
        while name in taken:
            k += 1
            name = f"{base}.{k}"
        taken.add(name)
        names.append(name)
    return names
