"""Characters of a training split's message text, for an estimate made without the dataset stage.

    counted = count_characters([Path("train.jsonl")])   # exact for a small file, else from a bounded sample
    counted.chars, counted.records, counted.sample        # sample: how it was estimated (None: all were read)

`tunegate estimate` and `tunegate advise` price a run before anything else has read the data (in the
gate the dataset stage has counted the characters and hands them on: `facts.content`). Reading every
record to price a run took minutes on 18 M records, so only a file of up to WHOLE_BYTES (on disk,
WHOLE_GZIP_BYTES for gzip) is read whole, and its figure is exact, as is a parquet file of up to
`sampling.PREFIX_RECORDS` rows; Arrow files are read whole. A larger file is sampled in bounded memory
and time (`tunegate.estimate.sampling`: windows spread over it, or its start), and the figure says
so: how many records were read of about how many, and its error, twice the estimate's standard error
(about 95 % of samples land within it).
"""
from __future__ import annotations

import functools
import math
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tunegate.errors import UsageError
from tunegate.estimate import sampling
from tunegate.estimate.sampling import GZIP, PIECE, Part
from tunegate.file_kinds import HEAD, kind
from tunegate.pathguard import open_regular

# 4 MiB is ~40,000 short chat records: under a second to read whole, and every file in a test or a
# quick experiment is exact; a sample reads about as much.
WHOLE_BYTES = 4 << 20
WHOLE_GZIP_BYTES = 512 << 10  # compressed: ~4 MiB of chat text at ordinary ratios (3-10x)
# At most this many records (bounded above by the braces a JSON file opens, the lines a CSV file
# ends) are read whole: WHOLE_BYTES of chat records open ~160,000 braces, but 1 M empty elements
# `{}` are only 3 MB and took 10 s to read whole.
WHOLE_RECORDS = 200_000
_GZIP_MAGIC = b"\x1f\x8b"
_Z = 2.0  # two standard errors: about 95 % of samples land within the stated error


class CharacterSample(BaseModel):
    """How a count was estimated when not every record was read."""

    model_config = ConfigDict(extra="forbid")

    records_read: int
    records_estimated: int  # the split's records, estimated from its bytes
    error_pct: float  # the characters' relative error, about 95 % (two standard errors)
    how: str  # "windows spread over the file" or "the file's start"

    def statement(self) -> str:
        return (f"estimated from a sample of {self.records_read:,} of about {self.records_estimated:,} records "
                f"(read from {self.how}), ±{self.error_pct:g} %")


class CharacterCount(BaseModel):
    """Characters of message text and records in a split: exact, or estimated (`sample`)."""

    model_config = ConfigDict(extra="forbid")

    chars: int
    records: int
    sample: CharacterSample | None = None


def count_characters(files: Path | Sequence[Path], fmt: str = "auto") -> CharacterCount:
    """Characters of message content in a split's files (one path, or several read in order).

    A file that cannot be read counts 0, as in `tunegate.dataset.records.message_chars`.
    """
    parts = [_count_file(Path(p), fmt) for p in ([files] if isinstance(files, (str, Path)) else files)]
    chars, records = sum(p.chars for p in parts), sum(p.records for p in parts)
    sampled = [p for p in parts if p.how]
    if not sampled:
        return CharacterCount(chars=int(chars), records=int(records))
    error = _Z * math.sqrt(sum(p.variance for p in parts)) / max(chars, 1.0)
    how = sampled[0].how if len({p.how for p in sampled}) == 1 else "each file's windows or start"
    sample = CharacterSample(records_read=sum(p.read for p in parts), records_estimated=round(records),
                             error_pct=max(round(100 * error, 1), 0.1), how=how)
    return CharacterCount(chars=round(chars), records=round(records), sample=sample)


def _count_file(path: Path, fmt: str) -> Part:
    try:
        size = os.stat(path).st_size
        with open_regular(path) as f:
            head = f.read(HEAD)
        return _sampled_or_whole(path, size, head, fmt)
    except (OSError, UsageError):
        return Part(0, 0)


def _sampled_or_whole(path: Path, size: int, head: bytes, fmt: str) -> Part:
    found = kind(path.name, head)
    gzipped = head.startswith(_GZIP_MAGIC)
    if found == "parquet":
        return sampling.parquet_start(path, fmt) or _whole(path, fmt)
    if found == "arrow" or (gzipped and size <= WHOLE_GZIP_BYTES) or (
            not gzipped and size <= WHOLE_BYTES and _records_bound(path, found) <= WHOLE_RECORDS):
        return _whole(path, fmt)
    start = _text_start(path, gzipped)
    array = start.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")
    mark = sampling.element_mark(start) if array else None
    if found in ("jsonl", "json") and not array:
        part = sampling.gzip_windows(path, fmt) if gzipped else sampling.plain_windows(path, size, fmt)
    elif found == "csv":
        header = start[:start.find(b"\n") + 1]
        part = (sampling.gzip_windows(path, fmt, header=header) if gzipped
                else sampling.plain_windows(path, size, fmt, header)) if header else None
    elif found == "json" and mark is not None:
        part = sampling.gzip_windows(path, fmt, mark) if gzipped else sampling.array_windows(path, size, fmt)
    else:
        part = sampling.prefix(path, size, gzipped, fmt)
    return part or _whole(path, fmt)


def _text_start(path: Path, gzipped: bool) -> bytes:
    """The first bytes of the file's text (inflated when it is gzip)."""
    with open_regular(path) as f:
        start = f.read(PIECE)
    if not gzipped:
        return start
    try:
        return zlib.decompressobj(GZIP).decompress(start, PIECE)
    except zlib.error:
        return b""


def _records_bound(path: Path, found: str) -> int:
    """At least the records a small file holds: a JSON record opens a brace, a CSV row ends a line."""
    with open_regular(path) as f:
        return f.read(WHOLE_BYTES + 1).count(b"\n" if found == "csv" else b"{")


def _whole(path: Path, fmt: str) -> Part:
    """Every record read: the exact figure (`message_chars`' count, and its records)."""
    from tunegate.dataset.records import iter_chats

    chars = records = 0
    for record in iter_chats(path, fmt):
        chars, records = chars + record.char_count(), records + 1
    return Part(chars, records)


def counted_characters(files: Path | Sequence[Path], fmt: str = "auto") -> CharacterCount:
    """`count_characters`, once per process for the same files unchanged: the advisor estimates a
    dozen variants of one spec, all on the same data."""
    paths = [Path(p) for p in ([files] if isinstance(files, (str, Path)) else files)]
    return _cached(tuple((str(p), *_identity(p)) for p in paths), fmt)


def _identity(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return -1, -1
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=8)


def _cached(files: tuple[tuple[str, int, int], ...], fmt: str) -> CharacterCount:
    return count_characters([Path(name) for name, _, _ in files], fmt)
