"""The one lenient reader of data files: every stage after the dataset stage reads records here.

    for line, index, record in iter_records(Path("data/train.jsonl")):   # .jsonl(.gz), .json, .parquet
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
- a `.json` (or `.json.gz`) file that holds one array is read element by element, each at the line
  where it starts (`tunegate.dataset.json_array`); a parquet file (magic `PAR1`, any name) row by
  row, with line 0 and the row index as the record index (`tunegate.dataset.parquet_rows`).
Records of any format (`tunegate.formats`) are seen as chats through `iter_chats`, the one
conversion every later stage shares.
Lines that are not one JSON object are skipped (the dataset stage has reported them) or, when
`strict`, raise UnreadableRecord: a digest of half a file must never stand for all of it.
"""
from __future__ import annotations

import gzip
import io
import os
import random
import stat
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from tunegate import formats
from tunegate.dataset import json_array, parquet_rows
from tunegate.errors import BrokenContainer, UnreadableRecord, UsageError

# 64 MiB: a 1M-token record is 4-8 MB of UTF-8 and real long documents run past 4 MiB, so this
# leaves 8x headroom over the longest contexts while bounding memory (a parsed line takes about 3x
# its size as Python objects: ~200 MB for a record at the cap; longer lines are skipped in pieces).
MAX_LINE_BYTES = 64 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
_BUFFER = 1 << 20
_BLANK = b" \t\r\n"


def unreadable(path: Path) -> str | None:
    """Why `path` cannot be read as a data file, or None when it can be opened.

    The one guard every command shares: a folder, a FIFO (which would block a read forever), a
    device such as /dev/zero (an endless stream) or a socket is refused before it is opened.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as exc:  # a symlink loop, a permission on a parent folder, a name too long
        return f"{path}: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return f"{path} is a folder, not a data file"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file (a device, pipe or socket)"
    return None


def open_stream(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is gzip, positioned after a BOM; UsageError when unreadable."""
    problem = unreadable(path)
    if problem:
        raise UsageError(f"file not found: {path}" if not os.path.lexists(path) else problem)
    try:
        raw = open(path, "rb", buffering=_BUFFER)  # noqa: SIM115 (the caller closes the stream)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    stream: BinaryIO = raw
    if raw.peek(2)[:2] == GZIP_MAGIC:
        stream = io.BufferedReader(_ClosingGzip(raw), _BUFFER)  # type: ignore[arg-type]
    try:
        if stream.peek(3)[:3] == BOM:  # type: ignore[attr-defined]
            stream.read(len(BOM))
    except (OSError, EOFError, zlib.error):
        pass  # a corrupt stream: the first read reports it where it matters
    return stream


class _ClosingGzip(gzip.GzipFile):
    """A GzipFile that closes the file it wraps (gzip.GzipFile(fileobj=...) leaves it open)."""

    def __init__(self, raw: BinaryIO):
        super().__init__(fileobj=raw, mode="rb")
        self._wrapped = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._wrapped.close()


def iter_records(path: Path, *, strict: bool = False,
                 max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Yield `(line, index, record)` for every JSON-object line: 1-based physical line, 0-based index.

    Raises UsageError when the file cannot be opened; when `strict`, UnreadableRecord at the first
    line that is not one JSON object, is too long, or where a gzip stream breaks off.
    """
    with open_stream(Path(path)) as stream:
        if stream.peek(4)[:4] == parquet_rows.MAGIC:  # type: ignore[attr-defined]
            yield from _parquet_records(Path(path), strict)
        elif is_json_name(Path(path)) and json_array.starts_array(stream):
            yield from _array_records(stream, Path(path), strict, max_line_bytes)
        else:
            yield from _jsonl_records(stream, Path(path), strict, max_line_bytes)


def is_json_name(path: Path) -> bool:
    """A `.json` or `.json.gz` name: such a file may hold one array of records."""
    name = path.name.lower()
    return name.endswith(".json") or name.endswith(".json.gz")


def _parquet_records(path: Path, strict: bool) -> Iterator[tuple[int, int, dict[str, Any]]]:
    try:
        for index, row in parquet_rows.rows(path):
            yield 0, index, row
    except BrokenContainer as exc:
        if strict:
            raise UnreadableRecord(f"{path}: not a readable parquet file: {exc}") from None


def _array_records(stream: BinaryIO, path: Path, strict: bool,
                   max_chars: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    index = 0
    try:
        for line, _, text in json_array.elements(stream, max_chars):
            record = _parse(text.encode("utf-8", "surrogatepass"), path, line, strict)
            if record is not None:
                yield line, index, record
            index += 1
    except BrokenContainer as exc:
        if strict:
            raise UnreadableRecord(f"{path}:{exc.line}: {exc}") from None
    except (OSError, EOFError, zlib.error) as exc:
        if strict:
            raise UnreadableRecord(f"{path}: cannot read further: {exc}") from None


def _jsonl_records(stream: BinaryIO, path: Path, strict: bool,
                   max_line_bytes: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    limit = max_line_bytes + 1
    line = index = 0
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
                    raise UnreadableRecord(f"{path}:{line}: the line is over {max_line_bytes:,} bytes")
                index += 1
                continue
            if not raw.strip(_BLANK):
                continue
            record = _parse(raw, path, line, strict)
            if record is not None:
                yield line, index, record
            index += 1
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt gzip stream
        if strict:
            raise UnreadableRecord(f"{path}:{line + 1}: cannot read further: {exc}") from None


def _skip_rest(readline: Any) -> None:
    while True:  # 1 MiB pieces: a huge line costs time to drain, never memory
        piece = readline(_BUFFER)
        if not piece or piece[-1] == 10:
            return


def _parse(raw: bytes, path: Path, line: int, strict: bool) -> dict[str, Any] | None:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if strict:
            raise UnreadableRecord(f"{path}:{line}: not valid JSON ({exc})") from None
        return None
    if type(record) is not dict:
        if strict:
            raise UnreadableRecord(f"{path}:{line}: a record must be a JSON object, got {type(record).__name__}")
        return None
    return record


def iter_canonical(path: Path, fmt: str = "auto", *,
                   strict: bool = False) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """`iter_records`, each record as every stage after the dataset stage sees it: in chat form
    (`tunegate.formats.canonical`), in the file's one format (given, or fixed by its first record)."""
    file_format = formats.FileFormat(fmt)
    for line, index, record in iter_records(path, strict=strict):
        yield line, index, formats.canonical(record, file_format.of(record, line)[0])


def feed_observers(files: dict[str, Path], observers: Sequence[Any], fmt: str = "auto") -> None:
    """Read each split once and feed every record to the observers, as the dataset stage does.

    For a stage whose dataset read ran in another step, and for benchmarks of the observers alone.
    """
    for role, path in files.items():
        for line, index, record in iter_canonical(path, fmt):
            for observer in observers:
                observer.observe(role, line, index, record)
        for observer in observers:
            observer.finish(role)


# -- the chat view of a record: its messages, each with text content --------------------------


@dataclass(frozen=True)
class ChatRecord:
    """One conversation and where it came from."""

    line: int  # 1-based physical line in the file (0 for a parquet row)
    index: int  # 0-based index among the file's records
    messages: list[dict[str, Any]]
    plain: bool = False  # plain prompt + completion text, trained without a chat template (TRL)
    completion_only: bool = False  # a prompt-completion record: only the completion is ever trained

    def char_count(self) -> int:
        return sum(len(m["content"]) for m in self.messages)


@dataclass(frozen=True)
class RecordSample:
    """The chat records read from one file: all of them, or a uniform sample when the file is large."""

    records: list[ChatRecord]
    total: int  # usable records in the whole file
    sampled: bool


def iter_chats(path: Path, fmt: str = "auto") -> Iterator[ChatRecord]:
    """The file's records, in any format, that hold a list of role-tagged messages, with text content."""
    file_format = formats.FileFormat(fmt)
    for line, index, record in iter_records(path):
        found = file_format.of(record, line)[0]
        messages = _messages(formats.canonical(record, found))
        if messages is not None:
            yield ChatRecord(line, index, messages, plain=formats.is_plain_text(record, found),
                             completion_only=found == "prompt_completion")


def read_chats(path: Path, limit: int | None = None, seed: int = 0, fmt: str = "auto") -> RecordSample:
    """The usable chat records of a file, keeping a uniform sample of `limit` of them.

    Reservoir sampling keeps memory bounded by `limit` however large the file is, and the fixed
    seed makes the sample (and so the report) the same on every run.
    """
    rng = random.Random(seed)
    kept: list[ChatRecord] = []
    total = 0
    for record in iter_chats(path, fmt):
        total += 1
        if limit is None or len(kept) < limit:
            kept.append(record)
            continue
        slot = rng.randrange(total)
        if slot < limit:
            kept[slot] = record
    kept.sort(key=lambda r: r.index)
    return RecordSample(kept, total, sampled=limit is not None and total > limit)


def message_chars(path: Path, fmt: str = "auto") -> int:
    """Characters of message content in a data file (0 when it cannot be read)."""
    try:
        return sum(record.char_count() for record in iter_chats(path, fmt))
    except UsageError:
        return 0


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


def _text(content: Any) -> str:
    """Content as one string; OpenAI-style lists of parts are joined, as templates expect text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
