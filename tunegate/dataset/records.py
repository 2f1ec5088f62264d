"""The one lenient reader of data files: every stage after the dataset stage reads records here.

    for line, index, record in iter_records(Path("data/train.jsonl")):   # .jsonl(.gz), .json, .parquet, .arrow, .csv
        ...
    for chat in iter_chats(Path("data/train.json"), fmt="auto"):           # any format, as chat messages
        ...

The dataset stage reads each file strictly and reports every defect (`tunegate.dataset.jsonl_reader`).
Everything that reads a file again (near duplicates, fingerprints, the token audit, the estimate,
the trainer) reads it here, so all of them see the same records at the same places:
- gzip is recognised by its magic bytes (1f 8b), whatever the file's name; a UTF-8 BOM is skipped;
- lines are split on b"\\n" only; line numbers count every physical line, blank lines included;
- every non-blank line takes a record index, also a line that does not parse (as in the strict
  reader, so `record` in a finding means the same everywhere);
- a line over MAX_LINE_BYTES is skipped in bounded pieces, so memory stays bounded;
- numbers are exact: orjson turns an integer beyond 64 bits, or a decimal with more digits than a
  double holds, into a nearby float, so a record holding a float is re-read with such numbers as
  `Decimal` (`exact_record`): an edit past float precision must change the digest;
- a `.json` (or `.json.gz`) file that holds one array is read element by element, each at the line
  where it starts (`tunegate.dataset.json_array`); a parquet file (magic `PAR1`, any name) row by
  row, with line 0 and the row index as the record index (`tunegate.dataset.parquet_rows`), and so
  an Arrow file (`save_to_disk`'s `.arrow` shards, `tunegate.dataset.arrow_rows`); a
  `.csv` (or `.csv.gz`) file row by row as `datasets` reads it, each at the line where the row
  starts (`tunegate.dataset.csv_rows`).
Records of any format (`tunegate.formats`) are seen as chats through `iter_chats`, the one
conversion every later stage shares. A split of several files is read here file by file, in order
(`read_chats`, `message_chars`; the canonical records of a split: `tunegate.dataset.split`).
Lines that are not one JSON object are skipped (the dataset stage has reported them) or, when
`strict`, raise UnreadableRecord: a digest of half a file must never stand for all of it. Two
things stop the read of a gzip stream in either mode, as they stop the dataset stage: inflating
like a decompression bomb (DecompressionBomb, `tunegate.dataset.inflate`) and more than
MAX_BLANK_RUN blank lines in a row (UnreadableRecord): neither is a dataset, and either could
hold the reader for hours.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from tunegate import formats
from tunegate.dataset import arrow_rows, csv_rows, json_array, parquet_rows
from tunegate.dataset.inflate import Inflated
from tunegate.dataset.json_line import has_float
from tunegate.errors import BrokenContainer, NumberOutOfRange, UnreadableRecord, UsageError
from tunegate.file_kinds import HEAD, kind
from tunegate.pathguard import open_regular, refusal, shown

# 64 MiB: a 1M-token record is 4-8 MB of UTF-8 and real long documents run past 4 MiB, so this
# leaves 8x headroom over the longest contexts while bounding memory (a parsed line takes about 3x
# its size as Python objects: ~200 MB for a record at the cap; longer lines are skipped in pieces).
MAX_LINE_BYTES = 64 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
_BUFFER = 1 << 20
_BLANK = b" \t\r\n"
# No writer puts 10,000 blank lines in a row between records: in a gzip stream such a run is a
# bomb (8 GiB of newlines in a few MB took lint past 120 s), so the read stops there (TG248).
MAX_BLANK_RUN = 10_000
_INT64_DIGITS = 18  # every integer of up to 18 digits fits orjson's 64-bit range
# A JSON number whose exponent has 19 digits or more: past Decimal's limit (10^18).
_HUGE_EXPONENT = re.compile(rb"-?\d+(?:\.\d+)?[eE][-+]?0*[1-9]\d{18,}")


def unreadable(path: Path) -> str | None:
    """Why `path` cannot be read as a data file, or None when it can be opened.

    The one guard every command shares (`tunegate.pathguard`): a folder, a FIFO (which would
    block a read forever), a device such as /dev/zero (an endless stream), a socket or a symlink
    loop is refused before it is opened.
    """
    return refusal(path)


def open_data(path: Path) -> tuple[BinaryIO, bool]:
    """The file's bytes, inflated when it is gzip (bounded, see `inflate`), and whether it was gzip.

    Raises UsageError when the path is not a regular file or cannot be opened.
    """
    raw = open_regular(path, buffering=_BUFFER)
    try:
        if raw.peek(2)[:2] == GZIP_MAGIC:  # type: ignore[attr-defined]
            return io.BufferedReader(Inflated(raw, shown(path)), _BUFFER), True  # type: ignore[arg-type]
    except OSError as exc:
        raw.close()
        raise UsageError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
    return raw, False


def open_stream(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is gzip, positioned after a BOM; UsageError when unreadable."""
    if not os.path.lexists(path):
        raise UsageError(f"file not found: {shown(path)}")
    stream, _ = open_data(Path(path))
    try:
        if stream.peek(3)[:3] == BOM:  # type: ignore[attr-defined]
            stream.read(len(BOM))
    except (OSError, EOFError, zlib.error):
        pass  # a corrupt stream: the first read reports it where it matters
    return stream


def exact_record(raw: bytes, record: dict[str, Any]) -> dict[str, Any]:
    """`record` with every number exact: the line re-read, numbers a double cannot hold as Decimal.

    Only for records that hold a float (orjson gives every inexact number as one); a line the
    standard library cannot follow (deeper than ~990 levels) keeps orjson's reading. Raises
    NumberOutOfRange for a number whose exponent no Decimal holds (orjson reads it as 0.0, so an
    edit to it would leave the digest unchanged): no real record holds one, and it is not hashed.
    """
    try:
        return json.loads(raw, parse_int=_exact_int, parse_float=_exact_float)  # type: ignore[no-any-return]
    except (ValueError, RecursionError):
        return record
    except InvalidOperation:
        raise NumberOutOfRange(_out_of_range(raw)) from None


def _out_of_range(raw: bytes) -> str:
    """The first number of `raw` whose exponent has more than 18 digits."""
    found = _HUGE_EXPONENT.search(raw)
    return found.group().decode("ascii") if found else "?"


def _exact_int(text: str) -> int | Decimal:
    if len(text.lstrip("-")) <= _INT64_DIGITS:
        return int(text)
    value = Decimal(text)
    return int(text) if -(1 << 63) <= value < (1 << 64) else value  # orjson's range stays an int


def _exact_float(text: str) -> float | Decimal:
    value = float(text)
    # A decimal that a double holds exactly enough reads back as itself from the double's repr.
    return value if Decimal(repr(value)) == Decimal(text) else Decimal(text)


def iter_records(path: Path, *, strict: bool = False,
                 max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Yield `(line, index, record)` for every JSON-object line: 1-based physical line, 0-based index.

    Raises UsageError when the file cannot be opened; when `strict`, UnreadableRecord at the first
    line that is not one JSON object, is too long, or where a gzip stream breaks off. In either
    mode DecompressionBomb for a gzip bomb and UnreadableRecord past MAX_BLANK_RUN blank lines.
    """
    with open_stream(Path(path)) as stream:
        try:
            found = kind(Path(path).name, stream.peek(HEAD)[:HEAD])  # type: ignore[attr-defined]
            array = found == "json" and json_array.starts_array(stream)
        except (OSError, EOFError, zlib.error) as exc:  # a gzip stream that breaks off in its header
            if strict:
                raise UnreadableRecord(f"{shown(path)}:1: cannot read: {exc}") from None
            return
        if found in ("parquet", "arrow"):
            yield from _table_records(Path(path), strict, parquet_rows.rows if found == "parquet" else arrow_rows.rows)
        elif found == "csv":
            yield from _until_broken(_csv_records(stream, Path(path), strict, max_line_bytes), Path(path), strict)
        elif array:
            yield from _until_broken(_array_records(stream, Path(path), strict, max_line_bytes), Path(path), strict)
        else:
            yield from _jsonl_records(stream, Path(path), strict, max_line_bytes)


def _table_records(path: Path, strict: bool, rows: Any) -> Iterator[tuple[int, int, dict[str, Any]]]:
    try:
        for index, row in rows(path):
            yield 0, index, row
    except BrokenContainer as exc:
        if strict:
            raise UnreadableRecord(f"{shown(path)}: not a readable {exc.kind} file: {exc}") from None


def _until_broken(records: Iterator[tuple[int, int, dict[str, Any]]], path: Path,
                  strict: bool) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """`records` until its container breaks off; when `strict`, the break as UnreadableRecord at its place."""
    try:
        yield from records
    except BrokenContainer as exc:
        if strict:
            raise UnreadableRecord(f"{shown(path)}:{exc.line}: {exc}") from None
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt gzip stream
        if strict:
            raise UnreadableRecord(f"{shown(path)}: cannot read further: {exc}") from None


def _csv_records(stream: BinaryIO, path: Path, strict: bool,
                 max_line_bytes: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for row in csv_rows.CsvTable(stream, max_line_bytes, csv_rows.separator(path.name)).rows():
        if row.record is not None:
            yield row.line, row.index, row.record
        elif strict:
            raise UnreadableRecord(f"{shown(path)}:{row.line}: the row has {row.fields} fields, more than the header")


def _array_records(stream: BinaryIO, path: Path, strict: bool,
                   max_chars: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    index = 0
    for line, _, text in json_array.elements(stream, max_chars):
        record = _parse(text.encode("utf-8", "surrogatepass"), shown(path), line, strict)
        if record is not None:
            yield line, index, record
        index += 1


def _jsonl_records(stream: BinaryIO, path: Path, strict: bool,
                   max_line_bytes: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    limit = max_line_bytes + 1
    line = index = last_blank = run_start = 0
    name = shown(path)
    # As in the dataset stage: the blank run is bounded in an inflated stream only.
    blank_limit = MAX_BLANK_RUN if isinstance(getattr(stream, "raw", None), Inflated) else 1 << 62
    readline = stream.readline
    try:
        while True:
            raw = readline(limit)
            if not raw:
                return
            line += 1
            if raw[-1] != 10 and len(raw) == limit:
                del raw  # up to 64 MiB: let it go before draining the rest of the line
                _skip_rest(readline)
                if strict:
                    raise UnreadableRecord(f"{name}:{line}: the line is over {max_line_bytes:,} bytes")
                index += 1
                continue
            if not raw.strip(_BLANK):
                run_start = run_start if last_blank == line - 1 else line
                last_blank = line
                if line - run_start >= blank_limit:
                    raise UnreadableRecord(f"{name}:{run_start}: over {MAX_BLANK_RUN:,} blank lines in a row; "
                                           "the file is padded or damaged")
                continue
            record = _parse(raw, name, line, strict)
            if record is not None:
                yield line, index, record
            index += 1
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt gzip stream
        if strict:
            raise UnreadableRecord(f"{name}:{line + 1}: cannot read further: {exc}") from None


def _skip_rest(readline: Any) -> None:
    while True:  # 1 MiB pieces: a huge line costs time to drain, never memory
        piece = readline(_BUFFER)
        if not piece or piece[-1] == 10:
            return


def _parse(raw: bytes, name: str, line: int, strict: bool) -> dict[str, Any] | None:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if strict:
            raise UnreadableRecord(f"{name}:{line}: not valid JSON ({exc})") from None
        return None
    if type(record) is not dict:
        if strict:
            raise UnreadableRecord(f"{name}:{line}: a record must be a JSON object, got {type(record).__name__}")
        return None
    try:
        return exact_record(raw, record) if has_float(record) else record
    except NumberOutOfRange as exc:
        if strict:
            raise NumberOutOfRange(exc.text, f"{name}:{line}: ") from None
        return None


def iter_canonical(path: Path, fmt: str = "auto", *,
                   strict: bool = False) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """`iter_records`, each record as every stage after the dataset stage sees it: in chat form
    (`tunegate.formats.canonical`), in the file's one format (given, or fixed by its first record)."""
    file_format = formats.FileFormat(fmt)
    for line, index, record in iter_records(path, strict=strict):
        yield line, index, formats.canonical(record, file_format.of(record, line)[0])


# -- the chat view of a record: its messages, each with text content --------------------------


@dataclass(frozen=True)
class ChatRecord:
    """One conversation and where it came from."""

    line: int  # 1-based physical line in the file (0 for a parquet row)
    index: int  # 0-based index among the file's records
    messages: list[dict[str, Any]]
    plain: bool = False  # plain prompt + completion text, trained without a chat template (TRL)
    completion_only: bool = False  # a prompt-completion record: only the completion is ever trained
    tools: list[dict[str, Any]] | None = None  # the record's tool definitions, which the template renders
    file: int = 0  # which of its split's files holds it (0-based; a split may be several files, read in order)

    def char_count(self) -> int:
        return sum(len(m["content"]) for m in self.messages)

    def place(self, names: Sequence[str]) -> dict[str, Any]:
        """Where a finding puts the record: its own file (`names`: the split's files as shown), line, index."""
        return {"file": names[self.file], "line": self.line, "record": self.index}


@dataclass(frozen=True)
class RecordSample:
    """The chat records read from a split: all of them, or a uniform sample when the split is large."""

    records: list[ChatRecord]
    total: int  # usable records in the whole split
    sampled: bool


def iter_chats(path: Path, fmt: str = "auto", file: int = 0) -> Iterator[ChatRecord]:
    """The file's records, in any format, that hold a list of role-tagged messages, with text content;
    `file` is the file's number in its split, which each record keeps."""
    file_format = formats.FileFormat(fmt)
    for line, index, record in iter_records(path):
        found = file_format.of(record, line)[0]
        chat = formats.canonical(record, found)
        messages = _messages(chat)
        if messages is not None:
            yield ChatRecord(line, index, messages, plain=formats.is_plain_text(record, found),
                             completion_only=formats.completion_only(found), tools=_tools(chat.get("tools")),
                             file=file)


def split_chats(files: Path | Sequence[Path], fmt: str = "auto") -> Iterator[ChatRecord]:
    """The chat records of a split's files (one path, or several), file after file, each knowing its file."""
    for number, path in enumerate([files] if isinstance(files, (str, Path)) else files):
        yield from iter_chats(Path(path), fmt, number)


def read_chats(files: Path | Sequence[Path], limit: int | None = None, seed: int = 0,
               fmt: str = "auto", budget_chars: int | None = None) -> RecordSample:
    """The usable chat records of a split (a file, or several read in order), keeping a uniform
    sample of `limit` of them, and fewer where their message characters would pass `budget_chars`.

    Reservoir sampling keeps memory bounded by `limit` however large the split is, and the fixed
    seed makes the sample (and so the report) the same on every run. A limit by count alone does not
    bound memory when records are long (20,000 records of 5,000 characters), so past `budget_chars`
    the reservoir is cut to a uniform subsample of itself that fits, and goes on at that size: a
    uniform subsample of a uniform sample is uniform.
    """
    rng = random.Random(seed)
    kept: list[ChatRecord] = []
    total = chars = 0
    for record in split_chats(files, fmt):
        total += 1
        if limit is None or len(kept) < limit:
            kept.append(record)
            chars += record.char_count()
        else:
            slot = rng.randrange(total)
            if slot >= limit:
                continue
            chars += record.char_count() - kept[slot].char_count()
            kept[slot] = record
        if budget_chars is not None and chars > budget_chars and len(kept) > 1:
            kept, chars = _within(kept, chars, budget_chars, rng)
            limit = len(kept)
    kept.sort(key=lambda r: (r.file, r.index))
    return RecordSample(kept, total, sampled=len(kept) < total)


def _within(kept: list[ChatRecord], chars: int, budget: int, rng: random.Random) -> tuple[list[ChatRecord], int]:
    """A uniform subsample of `kept` sized to hold about three quarters of `budget` characters (room
    to go on before the next cut), at least one record; and its characters."""
    size = max(1, min(len(kept) - 1, int(len(kept) * 0.75 * budget / chars)))
    smaller = rng.sample(kept, size)
    return smaller, sum(r.char_count() for r in smaller)


def message_chars(files: Path | Sequence[Path], fmt: str = "auto") -> int:
    """Characters of message content in a split's files (a file that cannot be read counts 0)."""
    total = 0
    for path in [files] if isinstance(files, (str, Path)) else files:
        try:
            total += sum(record.char_count() for record in iter_chats(Path(path), fmt))
        except UsageError:
            pass
    return total


def _messages(obj: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The record's messages with string roles and string content, or None if it has none."""
    if not isinstance(obj.get("messages"), list):
        return None
    messages = []
    for msg in obj["messages"]:
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            return None
        messages.append({**msg, "content": _text(msg.get("content"))})
    return messages or None


def _tools(value: Any) -> list[dict[str, Any]] | None:
    """A record's `tools` as chat templates take them: a list of JSON schemas. TRL and axolotl pass
    the column to `apply_chat_template`; LLaMA-Factory's ShareGPT files hold it as JSON text."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if isinstance(value, list) and value and all(isinstance(tool, dict) for tool in value):
        return value
    return None


def _text(content: Any) -> str:
    """Content as one string; OpenAI-style lists of parts are joined, as templates expect text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
