"""Strict, streaming JSONL reading: every physical line, one JSON object each, never an exception.

    reader = JsonlReader(Path("data/train.jsonl"), collector)
    for line, index, raw, record in reader.records():
        ...

What it decides (documented in docs/checks.md, "Dataset"):
- Lines are split on b"\\n" only, so U+2028/U+2029 inside strings never split a record; CRLF is
  accepted (JSON ignores the trailing \\r). Line numbers count every physical line; blank lines
  (only spaces, tabs, \\r) are allowed and counted, and do not take a record index.
- Memory is constant: one line at a time, each at most `max_line_bytes` (longer lines are skipped in
  pieces and reported, TG228).
- gzip is recognised by its magic bytes (1f 8b), whatever the file's name, and streamed. A UTF-8 BOM
  is an error (TG244: the JSON Lines spec forbids it and `json.loads` on text fails on it) but the
  rest of the file is still checked. UTF-16/32 and other compressions are named (TG245).
- Two things stop the read of a gzip stream, said so at their line: inflating like a
  decompression bomb (TG247, `tunegate.dataset.inflate`) and a run of more than MAX_BLANK_RUN
  blank lines (TG248). Neither is a dataset, and either could hold the gate for hours.
- Parsing is orjson's, which is strict: NaN/Infinity, numbers that overflow a double, lone
  surrogates, invalid UTF-8 and control characters are all rejected. Diagnosing a bad line (slow
  path, only for lines that fail) lives in `tunegate.dataset.json_line`.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import orjson

from tunegate.dataset import containers, json_array, json_line
from tunegate.dataset.inflate import MAX_RATIO
from tunegate.dataset.json_line import diagnose, non_object, not_jsonl, too_long
from tunegate.dataset.records import BOM, MAX_BLANK_RUN, MAX_LINE_BYTES, open_data
from tunegate.errors import BrokenContainer, DecompressionBomb, UsageError
from tunegate.file_kinds import HEAD, kind
from tunegate.pathguard import shown
from tunegate.report import FindingCollector

_BUFFER = 1 << 20  # the piece a huge line is drained in
# What a break every container can have is reported as (BrokenContainer.kind -> code).
_BREAK_CODES = {"utf8": json_line.INVALID_UTF8, "depth": json_line.TOO_DEEP, "size": json_line.TOO_LONG}
_BLANK = b" \t\r\n"
# Magic numbers of formats that are not UTF-8 JSONL, and what to tell the user.
_FOREIGN = [
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"), (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"), (b"\xfe\xff", "UTF-16 (big-endian)"),
    (b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"), (b"PK\x03\x04", "a zip archive"),
]


class JsonlReader:
    """Reads one JSONL file, reporting every problem to `out`, yielding the JSON objects.

    Attributes after `records()` is exhausted: `lines` (physical lines), `blank_lines`, `records`
    (non-blank lines, valid or not), `gzip` and `bom` (what the file was).
    """

    def __init__(self, path: Path, out: FindingCollector, max_line_bytes: int = MAX_LINE_BYTES):
        self.path = Path(path)
        self.file = shown(path)
        self.out = out
        self.max_line_bytes = max_line_bytes
        self.lines = self.blank_lines = self.records_seen = 0
        self.gzip = self.bom = self.unreadable = False
        self.container = "jsonl"  # or "json" (one array), "parquet", "arrow" or "csv", decided on opening
        self.csv_header = False  # a CSV file's header row was read
        self.column = 1  # where the record being checked starts on its line (>1: a JSON array's element)
        # A part of a file (tunegate.dataset.segments) reads only `budget` bytes, and only the
        # file's first part holds its first record (which may reveal a JSON array or document).
        self.budget: int | None = None
        self.holds_first_record = True

    def bytes_read(self) -> int:
        """How far into the file (its bytes on disk, compressed or not) reading has come; for progress."""
        raw = getattr(self, "_raw", None)
        return raw.tell() if raw is not None and not raw.closed else 0

    def error(self, code: str, message: str, hint: str, line: int | None = None,
              column: int | None = None, record: int | None = None) -> None:
        self.out.add(code, "error", message, hint, file=self.file, line=line, column=column, record=record)

    def records(self) -> Iterator[tuple[int, int, bytes, dict]]:
        """Yield (line, record index, raw line bytes, parsed object) for every JSON-object line."""
        stream = self._open()
        if stream is None:
            return
        try:
            found = kind(self.path.name, stream.peek(HEAD)[:HEAD])  # type: ignore[attr-defined]
            if not self.holds_first_record:  # a later part of a JSONL file (the whole file was sniffed)
                yield from self._scan(stream)
            elif found == "parquet":
                self.container = "parquet"
                yield from containers.parquet_records(self)
            elif found == "arrow":
                self.container = "arrow"
                yield from containers.arrow_records(self)
            elif found == "csv":
                self.container = "csv"
                yield from containers.csv_records(self, stream)
            elif found == "json" and json_array.starts_array(stream):
                self.container = "json"
                yield from containers.array_records(self, stream)
            else:
                yield from self._scan(stream)
        finally:
            stream.close()
        self._report_emptiness()

    def _scan(self, stream: BinaryIO) -> Iterator[tuple[int, int, bytes, dict]]:
        # The hot loop: per line one readline, one orjson call and a type check; counters are
        # locals, written back once at the end.
        readline, loads, limit = stream.readline, orjson.loads, self.max_line_bytes + 1
        n = index = blank = last_blank = run_start = 0
        # Only an inflated stream can hold an endless blank run cheaply (a few KB on disk); a plain
        # file's size bounds the work, and it may be read in parts that must agree with one read.
        blank_limit = MAX_BLANK_RUN if self.gzip else 1 << 62
        bounded, budget = self.budget is not None, self.budget or 0
        first = self.holds_first_record
        try:
            while not bounded or budget > 0:
                raw = readline(limit)
                if not raw:
                    break
                n += 1
                budget -= len(raw)
                if raw[-1] != 10 and len(raw) == limit:
                    del raw  # up to 64 MiB: let it go before draining the rest of the line
                    budget -= self._skip_long_line(readline, limit, n, index)
                    index += 1
                    continue
                try:
                    record = loads(raw)
                except orjson.JSONDecodeError as exc:
                    if not raw.strip(_BLANK):
                        blank += 1
                        run_start = run_start if last_blank == n - 1 else n
                        last_blank = n
                        if n - run_start >= blank_limit:
                            self._report_blank_run(run_start)
                            break
                        continue
                    if index == 0 and first and _starts_document(raw):
                        not_jsonl(raw, self, n)  # every further line would be noise
                        index += 1
                        break
                    diagnose(raw, exc, self, n, index)
                    index += 1
                    continue
                if type(record) is dict:
                    yield n, index, raw, record
                else:
                    # Only the file's first record can be the start of a JSON array of records (TG243);
                    # an empty list stands in for a later part's first line: the same TG227 message.
                    non_object(record if first or index or type(record) is not list else [], self, n, index)
                index += 1
        except DecompressionBomb as exc:
            self.stopped_inflating(exc, f"after line {n}", n + 1, "Check the file: `gzip -l FILE` shows its sizes. "
                                   "Real JSONL inflates 3-10x and even a file of one record repeated stays under "
                                   f"400x; past {MAX_RATIO}x it is not data. If it is, store it uncompressed.")
        except (OSError, EOFError, zlib.error) as exc:  # a corrupt gzip stream or a failing disk
            self.read_failed(n, exc)
        finally:
            self.lines, self.records_seen, self.blank_lines = n, index, blank

    def read_failed(self, n: int, exc: BaseException) -> None:
        """Report that reading stopped after physical line `n` (a part of a file reports it to its reader)."""
        what = "the gzip stream is corrupt or truncated" if self.gzip else "reading failed"
        self.error("TG246", f"{what} after line {n}: {exc}", "Re-create or re-download the file; "
                   "`gzip -t FILE` tests a gzip file.", line=n + 1, column=1)

    def stopped_inflating(self, exc: DecompressionBomb, where: str, line: int, hint: str) -> None:
        """Report that the stream inflated like a decompression bomb, so reading stopped `where` (TG247)."""
        self.error("TG247", f"{exc}; reading stopped {where} ({exc.inflated:,} bytes inflated)", hint, line=line,
                   column=1)

    def broken(self, exc: BrokenContainer, code: str, message: str, hint: str, record: int) -> None:
        """Report where a container stopped being readable: with `code`, unless the break is one
        every container shares (invalid UTF-8, too deep, too long), which has its own."""
        self.error(_BREAK_CODES.get(exc.kind, code), message, hint, line=exc.line, column=exc.column, record=record)

    def _skip_long_line(self, readline, limit: int, n: int, index: int) -> int:
        size = limit
        while True:  # drain the rest of the line in 1 MiB pieces: time, but no memory, for a huge line
            piece = readline(_BUFFER)
            size += len(piece)
            if not piece or piece[-1] == 10:
                break
        too_long(size, self.max_line_bytes, self, n, index)
        return size - limit  # bytes drained after the first piece

    def _report_blank_run(self, start: int) -> None:
        # The line is the finding's place (a part read by a worker has its lines shifted afterwards).
        self.error("TG248", f"over {MAX_BLANK_RUN:,} blank lines in a row from here; reading stopped",
                   "The file is padded or damaged (no writer leaves that many blank lines between records): "
                   "regenerate it, or delete the run (`grep -v '^\\s*$' FILE`) if the records after it are real.",
                   line=start, column=1)

    def _report_emptiness(self) -> None:
        if self.records_seen or self.unreadable:
            return
        # A `.json` array or a parquet table without records is not an empty file: it has bytes, and
        # its fix is to fill it, not to find the real file (TG241 is 0 bytes only).
        if self.container == "json":
            self.error("TG242", "the file holds a JSON array with no records",
                       "Put the records in it, one JSON object per record: [{...}, {...}]; a dataset without "
                       "records gives a training loop with nothing to do.", line=1, column=1)
        elif self.container in ("parquet", "arrow"):
            what = "Arrow" if self.container == "arrow" else "parquet"
            self.error("TG242", f"the {what} file has no rows", "Export the table with its rows; a dataset "
                       "without records gives a training loop with nothing to do.", line=1, column=1)
        elif self.container == "csv" and self.csv_header:
            self.error("TG242", "the CSV file has a header but no rows", "Export the table with its rows; a "
                       "dataset without records gives a training loop with nothing to do.", line=1, column=1)
        elif self.lines == 0:
            self.error("TG241", "the file is empty", "Point the spec at the real data file; "
                       "an empty dataset gives a training loop with nothing to do.", line=1, column=1)
        else:
            self.error("TG242", f"the file has {self.lines} line(s) but all are blank: no records",
                       "Write one JSON object per line.", line=1, column=1)

    def _open(self) -> BinaryIO | None:
        """Open the file (gzip or plain) positioned after any BOM; None when it cannot be read."""
        try:
            stream, self.gzip = open_data(self.path)
        except UsageError as exc:  # a folder, FIFO, device, symlink loop, missing file (pathguard)
            self.error("TG240", f"cannot read the file: {exc}",
                       "Check the path (relative paths in a spec resolve against the spec's folder) "
                       "and the file's permissions.")
            return None
        return self._check_start(stream)

    def _check_start(self, stream: BinaryIO) -> BinaryIO | None:
        try:
            head = stream.peek(6)[:6]  # type: ignore[attr-defined]
        except (OSError, EOFError, zlib.error, DecompressionBomb) as exc:
            stream.close()
            self.error("TG246", f"the gzip stream is corrupt: {exc}", "Re-create the file; "
                       "`gzip -t FILE` tests it.", line=1, column=1)
            return None
        if head.startswith(BOM) and kind(self.path.name, head) == "csv":
            stream.read(len(BOM))  # Excel's "CSV UTF-8" starts so, and pandas reads past it
            return stream
        if head.startswith(BOM):
            self.bom = True
            stream.read(len(BOM))
            self.error("TG244", "the file starts with a UTF-8 byte order mark (BOM)",
                       "Remove it: `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`, or save as 'UTF-8' rather than "
                       "'UTF-8 with BOM'. The JSON Lines format forbids it and many loaders fail on line 1.",
                       line=1, column=1)
            return stream
        foreign = _foreign_format(head)
        if foreign:
            stream.close()
            self.error("TG245", f"the file is {foreign}, not UTF-8 JSON Lines",
                       "Convert it to UTF-8 text (e.g. `iconv -f UTF-16 -t UTF-8`), or compress with "
                       "gzip (.jsonl.gz), the only compression tunegate reads.", line=1, column=1)
            return None
        return stream


def _starts_document(raw: bytes) -> bool:
    """A first line that opens a multi-line JSON document: `[...` or a lone `{`."""
    head = raw.strip(_BLANK)
    return head.startswith(b"[") or head == b"{"


def _foreign_format(head: bytes) -> str | None:
    for magic, name in _FOREIGN:
        if head.startswith(magic):
            return name
    # UTF-16 without a BOM: ASCII characters interleaved with NUL bytes.
    if len(head) >= 4 and head[1] == 0 and head[3] == 0 and head[0] and head[2]:
        return "UTF-16 (little-endian, no BOM)"
    if len(head) >= 4 and head[0] == 0 and head[2] == 0 and head[1] and head[3]:
        return "UTF-16 (big-endian, no BOM)"
    return None

