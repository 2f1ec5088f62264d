"""Characters of a training split's message text, for an estimate made without the dataset stage.

    counted = count_characters([Path("train.jsonl")])   # exact for a small file, else from a bounded sample
    counted.chars, counted.records, counted.sample        # sample: how it was estimated (None: all were read)

`tunegate estimate` and `tunegate advise` price a run before anything else has read the data (in the
gate the dataset stage has counted the characters and hands them on: `facts.content`). Reading every
record to price a run took minutes on 18 M records, so only a file of up to WHOLE_BYTES (on disk) is
read whole, and its figure is exact. A larger one is sampled in bounded memory and time; the sampled
bytes are copied to a temporary file and read there by the one lenient reader
(`tunegate.dataset.records`), so a sampled record counts as it would in a full read:
- a plain JSON-lines file: WINDOWS windows of WINDOW_BYTES spread evenly over it, each cut at line
  ends; characters and records are the sample's per byte times the file's bytes (a ratio estimator
  over the windows), with an error of twice its standard error (about 95 %);
- anything else (gzip, a `.json` array, CSV): its first PREFIX_BYTES of text (for gzip, the compressed
  bytes they came from are counted exactly), scaled by the file's size; the error is that of the mean
  characters per record, and it assumes the rest of the file is like its start;
- parquet and Arrow files are read whole.
"""
from __future__ import annotations

import functools
import math
import os
import re
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tunegate import progress
from tunegate.errors import UsageError
from tunegate.file_kinds import HEAD, kind
from tunegate.pathguard import open_regular

# 4 MiB is ~40,000 short chat records: under a second to read whole, and every file in a test or a
# quick experiment is exact; a sample reads as much (WINDOWS x WINDOW_BYTES = PREFIX_BYTES).
WHOLE_BYTES = 4 << 20
WHOLE_GZIP_BYTES = 512 << 10  # compressed: ~4 MiB of chat text at ordinary ratios (3-10x)
WINDOWS = 32
WINDOW_BYTES = 128 << 10
PREFIX_BYTES = 4 << 20
# Records parsed at most: per window, and in a prefix (a record is an object: it opens at least one
# brace). 1 M empty elements `{}` are 3 MB, which by bytes alone would be read whole, at 10 s.
WINDOW_RECORDS = 1_000
PREFIX_RECORDS = 32_000
WHOLE_BRACES = 200_000  # a file of WHOLE_BYTES of chat records opens ~160,000
# A record longer than a window is read to its end, up to this: a longer one leaves its window empty.
MAX_RECORD_BYTES = 16 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP = 16 + zlib.MAX_WBITS
_PIECE = 64 << 10
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


class _Part:
    """One file's figures: exact, or an estimate with its variance (in characters squared)."""

    def __init__(self, chars: float, records: float, read: int = 0, variance: float = 0.0, how: str = ""):
        self.chars, self.records, self.read, self.variance, self.how = chars, records, read, variance, how


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


def _count_file(path: Path, fmt: str) -> _Part:
    try:
        size = os.stat(path).st_size
        with open_regular(path) as f:
            head = f.read(HEAD)
        return _sampled_or_whole(path, size, head, fmt)
    except (OSError, UsageError):
        return _Part(0, 0)


def _sampled_or_whole(path: Path, size: int, head: bytes, fmt: str) -> _Part:
    found = kind(path.name, head)
    gzipped = head.startswith(_GZIP_MAGIC)
    if found in ("parquet", "arrow") or (gzipped and size <= WHOLE_GZIP_BYTES) or (
            not gzipped and size <= WHOLE_BYTES and _braces(path) <= WHOLE_BRACES):
        return _whole(path, fmt)
    array = _text_start(path, gzipped).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")
    if found in ("jsonl", "json") and not array:
        return _gzip_windows(path, fmt) if gzipped else _windows(path, size, fmt)
    if array and not gzipped:
        return _array_windows(path, size, fmt) or _prefix(path, size, gzipped, fmt)
    return _prefix(path, size, gzipped, fmt)


def _text_start(path: Path, gzipped: bool) -> bytes:
    """The first bytes of the file's text (inflated when it is gzip)."""
    with open_regular(path) as f:
        start = f.read(_PIECE)
    if not gzipped:
        return start[:4096]
    try:
        return zlib.decompressobj(_GZIP).decompress(start, 4096)
    except zlib.error:
        return b""


def _braces(path: Path) -> int:
    with open_regular(path) as f:
        return f.read(WHOLE_BYTES + 1).count(b"{")


def _first(text: bytes, mark: bytes, n: int) -> int:
    """Where the `n`-th `mark` in `text` ends (len(text) when there are fewer)."""
    at = 0
    for _ in range(n):
        found = text.find(mark, at)
        if found < 0:
            return len(text)
        at = found + len(mark)
    return at


def _whole(path: Path, fmt: str) -> _Part:
    """Every record read: the exact figure (`message_chars`' count, and its records)."""
    from tunegate.dataset.records import iter_chats

    chars = records = 0
    for record in iter_chats(path, fmt):
        chars, records = chars + record.char_count(), records + 1
    return _Part(chars, records)


def _windows(path: Path, size: int, fmt: str) -> _Part:
    """The ratio estimate over WINDOWS windows spread evenly over a plain JSON-lines file."""
    figures = []  # (characters, records, bytes) per window
    with open_regular(path) as f, tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        step = (size - WINDOW_BYTES) / (WINDOWS - 1)
        for k in range(WINDOWS):
            text = _lines_at(f, round(k * step))
            figures.append((*_read_sample(Path(tmp), path.name, text, fmt), len(text)))
    return _ratio_estimate(figures, size) or _whole(path, fmt)


def _gzip_windows(path: Path, fmt: str) -> _Part:
    """The ratio estimate over windows spread over a gzip JSON-lines file's text.

    Inflating is fast next to parsing (a few seconds for 18 M records, in the dataset reader's bounded
    `Inflated`), so the whole stream is inflated, its text bytes counted exactly, and a window kept
    each time the compressed position passes another WINDOWS-th of the file."""
    from tunegate.dataset.inflate import Inflated

    size = max(os.stat(path).st_size, 1)
    texts, total = [], 0
    with (open_regular(path, buffering=1 << 20) as raw, Inflated(raw, path.name) as stream,
          progress.step(f"sampling {path.name}", total=size, unit="bytes", poll=raw.tell)):
        pending: bytes | None = None
        while piece := stream.read(1 << 20):
            first = total == 0
            total += len(piece)
            if pending is None and raw.tell() >= len(texts) * size / WINDOWS:
                start = 0 if first else piece.find(b"\n") + 1
                pending = piece[start:] if first or start else None
            elif pending is not None:
                pending += piece
            if pending is not None and len(pending) >= WINDOW_BYTES:
                end = pending.rfind(b"\n", 0, WINDOW_BYTES) + 1 or pending.find(b"\n") + 1
                if end or len(pending) > MAX_RECORD_BYTES:
                    texts.append(pending[:end])
                    pending = None
        if pending:
            texts.append(pending)
    with tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        figures = [(*_read_sample(Path(tmp), path.name, text, fmt), len(text)) for text in texts]
    return _ratio_estimate(figures, total) or _whole(path, fmt)


def _ratio_estimate(figures: list[tuple[int, int, float, int]], size: int) -> _Part | None:
    """Characters and records per byte over the windows, times the text's `size` bytes; None when the
    windows hold nothing (or cover all the text: the whole read is as cheap)."""
    figures = [(c, n, b) for c, n, _, b in figures]
    read_bytes = sum(b for _, _, b in figures)
    if not read_bytes or read_bytes >= size or len(figures) < 2:
        return None
    windows = len(figures)
    per_byte = sum(c for c, _, _ in figures) / read_bytes
    residuals = [c - per_byte * b for c, _, b in figures]
    kept = 1.0 - read_bytes / size  # the finite-population correction
    # Var of the total: size^2 * Var(ratio), Var(ratio) = sum(residuals^2) / (K (K-1) mean_bytes^2).
    mean_bytes = read_bytes / windows
    variance = size ** 2 * kept * sum(r * r for r in residuals) / (windows * (windows - 1) * mean_bytes ** 2)
    records = sum(n for _, n, _ in figures)
    return _Part(per_byte * size, records / read_bytes * size, records, variance, "windows spread over the file")


def _lines_at(f, offset: int, mark: bytes = b"\n") -> bytes:  # noqa: ANN001 (an open binary file)
    """The whole records of the window that starts at `offset`: from just after the first `mark` (a
    record's start follows it; from the file's start at offset 0) to just after the last."""
    f.seek(offset)
    text = f.read(WINDOW_BYTES)
    if offset:
        text = _extend(f, text, lambda t: t.find(mark))
        found = text.find(mark)
        text = text[found + 1:] if found >= 0 else b""
    text = _extend(f, text, lambda t: t.rfind(mark)) if text else text
    text = text[:_first(text, mark, WINDOW_RECORDS)]
    found = text.rfind(mark)
    return text[:found + 1] if found >= 0 else text if len(text) < WINDOW_BYTES else b""


def _extend(f, text: bytes, where) -> bytes:  # noqa: ANN001
    """`text` read on while `where(text)` finds nothing: a record longer than a window, up to MAX_RECORD_BYTES."""
    while where(text) < 0 and len(text) < MAX_RECORD_BYTES:
        more = f.read(_PIECE)
        if not more:
            break
        text += more
    return text


def _array_windows(path: Path, size: int, fmt: str) -> _Part | None:
    """The ratio estimate over windows of a `.json` array whose elements each start a line (one per
    line, or pretty-printed: the least indented `{` after a line break opens an element); None for an
    array on one line, which has no such mark."""
    with open_regular(path) as f:
        indents = [len(m.group(1)) for m in re.finditer(rb"\n([ \t]*)\{", f.read(_PIECE))]
    if not indents:
        return None
    mark = b"\n" + b" " * min(indents) + b"{"
    figures = []
    with open_regular(path) as f, tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        step = (size - WINDOW_BYTES) / (WINDOWS - 1)
        for k in range(WINDOWS):
            text = _lines_at(f, round(k * step), mark)
            elements = text.strip(b"\xef\xbb\xbf \t\r\n").removeprefix(b"[").rstrip(b" \t\r\n,")
            counted = _read_sample(Path(tmp), path.name, b"[" + elements + b"]", fmt) if elements else (0, 0, 0.0)
            figures.append((*counted, len(text)))
    return _ratio_estimate(figures, size)


def _prefix(path: Path, size: int, gzipped: bool, fmt: str) -> _Part:
    """The estimate from the file's first PREFIX_BYTES of text, scaled by its size."""
    with open_regular(path) as f:
        text, used, complete = _inflated_start(f) if gzipped else (f.read(PREFIX_BYTES), 0, False)
    if complete:  # a gzip whose whole text fitted the prefix: nothing is estimated
        return _whole(path, fmt)
    full = len(text)
    text = text[:_first(text, b"{", PREFIX_RECORDS)]
    end = text.rfind(b"\n") + 1 or len(text)
    used = used * end / full if gzipped and full else end
    with tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        chars, records, moments = _read_sample(Path(tmp), path.name, text[:end], fmt, moments=True)
    if not used:
        return _whole(path, fmt)
    if not records:  # no record of the sample holds a chat: none of the rest is assumed to
        return _Part(0, 0, 0, 0.0, "the file's start, assuming the rest is alike")
    scale = size / used
    mean, spread = chars / records, math.sqrt(moments / records - (chars / records) ** 2) if records > 1 else 0.0
    kept = max(0.0, 1.0 - 1.0 / scale)
    total = chars * scale
    variance = (total * spread / max(mean, 1e-9)) ** 2 * kept / records
    return _Part(total, records * scale, records, variance, "the file's start, assuming the rest is alike")


def _inflated_start(f) -> tuple[bytes, int, bool]:  # noqa: ANN001 (an open binary file)
    """Up to PREFIX_BYTES of a gzip file's text, the compressed bytes they came from, and whether that
    is all of it. Inflated here rather than through the dataset reader, which cannot say how many
    compressed bytes a given output cost; PREFIX_BYTES bounds the output, so a bomb costs no more."""
    out, used, inflater = [], 0, zlib.decompressobj(_GZIP)
    have, pending = 0, b""
    while have < PREFIX_BYTES:
        if not pending:
            pending = f.read(_PIECE)
            if not pending:
                return b"".join(out), used, True
        if inflater.eof:  # the next member of a multi-member gzip, after any zero padding
            stripped = pending.lstrip(b"\x00")
            used, pending = used + len(pending) - len(stripped), stripped
            if pending:
                inflater = zlib.decompressobj(_GZIP)
            continue
        try:
            piece = inflater.decompress(pending, PREFIX_BYTES - have)
        except zlib.error:
            return b"".join(out), used, True
        rest = inflater.unconsumed_tail or inflater.unused_data
        used += len(pending) - len(rest)
        pending = rest
        out.append(piece)
        have += len(piece)
    return b"".join(out), used, False


def _read_sample(tmp: Path, name: str, text: bytes, fmt: str, moments: bool = False) -> tuple[int, int, float]:
    """(characters, records, sum of squared characters per record) of `text`, read by the lenient reader
    from a file of the original's name (its suffix says its kind), less any .gz: the text is inflated."""
    from tunegate.dataset.records import iter_chats

    target = tmp / re.sub(r"\.gz$", "", name, flags=re.IGNORECASE)
    target.write_bytes(text)
    chars = records = 0
    squares = 0.0
    for record in iter_chats(target, fmt):
        n = record.char_count()
        chars, records, squares = chars + n, records + 1, squares + n * n
    target.unlink()
    return chars, records, squares if moments else 0.0


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
