"""Samplers of a large data file: characters and records estimated from a bounded part of it.

    part = plain_windows(path, size, "auto")    # None when the windows hold nothing to estimate from
    part.chars, part.records, part.read, part.variance, part.how

The front door is `tunegate.estimate.characters`, which decides what is read whole. The sampled bytes
are copied to a temporary file and read there by the one lenient reader (`tunegate.dataset.records`),
so a sampled record counts as it would in a full read:
- a plain JSON-lines file: WINDOWS windows of WINDOW_BYTES spread evenly over it, each cut at line
  ends; characters and records are the sample's per byte times the file's bytes (a ratio estimator
  over the windows), with a variance from the windows' spread;
- a gzip JSON-lines file: inflated whole (fast next to parsing, and bounded by the dataset reader's
  `Inflated`), its text bytes counted exactly, a window kept each WINDOWS-th of the compressed file;
- a `.json` array whose elements each start a line: windows as above, cut where an element starts;
- parquet: its first PREFIX_RECORDS rows, scaled by the row count its footer holds;
- a CSV file (plain or gzip): windows of rows as above, each read under the file's header line (a
  quoted field that spans lines may cut a window's first row);
- anything else (an array on one line): its first PREFIX_BYTES of text (for gzip,
  the compressed bytes they came from are counted exactly), scaled by the file's size; its variance
  is that of the mean characters per record, and it assumes the rest of the file is like its start.
A window or a prefix parses at most WINDOW_RECORDS or PREFIX_RECORDS records: 1 M empty elements
`{}` are only 3 MB.
"""
from __future__ import annotations

import math
import os
import re
import tempfile
import zlib
from pathlib import Path

from tunegate import progress
from tunegate.pathguard import open_regular, shown

WINDOWS = 32
WINDOW_BYTES = 128 << 10
PREFIX_BYTES = 4 << 20  # as much as the windows together
WINDOW_RECORDS = 1_000
PREFIX_RECORDS = 32_000
# A record longer than a window is read to its end, up to this: a longer one leaves its window empty.
MAX_RECORD_BYTES = 16 << 20
GZIP = 16 + zlib.MAX_WBITS  # zlib's wbits for a gzip header and trailer
PIECE = 64 << 10


class Part:
    """One file's figures: exact, or an estimate with its variance (in characters squared)."""

    def __init__(self, chars: float, records: float, read: int = 0, variance: float = 0.0, how: str = ""):
        self.chars, self.records, self.read, self.variance, self.how = chars, records, read, variance, how


def plain_windows(path: Path, size: int, fmt: str, header: bytes = b"") -> Part | None:
    """The ratio estimate over WINDOWS windows spread evenly over a plain JSON-lines file (or a CSV
    file, each window read under its `header` line)."""
    figures = []  # (characters, records, squares, bytes) per window
    with open_regular(path) as f, tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        step = (size - WINDOW_BYTES) / (WINDOWS - 1)
        for k in range(WINDOWS):
            text = _lines_at(f, round(k * step))
            figures.append((*_read_window(Path(tmp), path.name, text, fmt, header=header), len(text)))
    return _ratio_estimate(figures, size)


def gzip_windows(path: Path, fmt: str, mark: bytes = b"\n", header: bytes = b"") -> Part | None:
    """The ratio estimate over windows spread over a gzip file's text: JSON lines, CSV rows under their
    `header` line, or a `.json` array whose elements start at `mark` (`element_mark`).

    Inflating is fast next to parsing (a few seconds for 18 M records, in the dataset reader's bounded
    `Inflated`), so the whole stream is inflated, its text bytes counted exactly, and a window kept
    each time the compressed position passes another WINDOWS-th of the file."""
    from tunegate.dataset.inflate import Inflated

    size = max(os.stat(path).st_size, 1)
    with (open_regular(path, buffering=1 << 20) as raw, Inflated(raw, path.name) as stream,
          progress.step(f"sampling {shown(path.name)}", total=size, unit="bytes", poll=raw.tell)):
        texts, total = _inflated_windows(stream, raw.tell, size, mark)
    array = mark != b"\n"
    with tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        figures = [(*_read_window(Path(tmp), path.name, text, fmt, array, header), len(text)) for text in texts]
    return _ratio_estimate(figures, total)


def _inflated_windows(stream, position, size: int, mark: bytes) -> tuple[list[bytes], int]:  # noqa: ANN001
    """The windows of an inflating stream, one each time `position()` (compressed bytes read) passes
    another WINDOWS-th of `size`, and the text's bytes in all. A stream that breaks off (truncated or
    corrupt) ends there, as the lenient reader's read of it does."""
    texts, total, pending = [], 0, None
    try:
        while piece := stream.read(1 << 20):
            first = total == 0
            total += len(piece)
            if pending is None and position() >= len(texts) * size / WINDOWS:
                start = 0 if first else piece.find(mark) + 1
                pending = piece[start:] if first or start else None
            elif pending is not None:
                pending += piece
            if pending is not None and len(pending) >= WINDOW_BYTES:
                end = _window_end(pending, mark)
                if end or len(pending) > MAX_RECORD_BYTES:
                    texts.append(pending[:end])
                    pending = None
    except (EOFError, zlib.error):
        pass
    if pending:
        texts.append(pending[:_window_end(pending, mark) or len(pending)])
    return texts, total


def _window_end(text: bytes, mark: bytes) -> int:
    """Where a window of `text` ends: after its last `mark` within WINDOW_BYTES and WINDOW_RECORDS
    records, else after the first (one record longer than a window); 0 when there is none yet."""
    limit = min(WINDOW_BYTES, _first(text, mark, WINDOW_RECORDS))
    return text.rfind(mark, 0, limit) + 1 or text.find(mark) + 1


def element_mark(start: bytes) -> bytes | None:
    """What opens each element of a `.json` array that starts with `start`: a line break and the least
    indentation any `{` after a line break has there (one element per line, or pretty-printed); None
    for an array on one line."""
    found = [m.group(1) for m in re.finditer(rb"\n([ \t]*)\{", start)]
    return b"\n" + min(found, key=len) + b"{" if found else None


def _read_window(tmp: Path, name: str, text: bytes, fmt: str, array: bool = False,
                 header: bytes = b"") -> tuple[int, int, float]:
    """`_read_sample` of a window; an array's window (whole elements) wrapped as an array of its own, a
    CSV window under the file's header line (the first window starts with it)."""
    if header and text and not text.startswith(header):
        text = header + text
    if not array:
        return _read_sample(tmp, name, text, fmt)
    elements = text.strip(b"\xef\xbb\xbf \t\r\n").removeprefix(b"[").rstrip(b" \t\r\n,]")
    return _read_sample(tmp, name, b"[" + elements + b"]", fmt) if elements else (0, 0, 0.0)


def _ratio_estimate(figures: list[tuple[int, int, float, int]], size: int) -> Part | None:
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
    return Part(per_byte * size, records / read_bytes * size, records, variance, "windows spread over the file")


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
        more = f.read(PIECE)
        if not more:
            break
        text += more
    return text


def array_windows(path: Path, size: int, fmt: str) -> Part | None:
    """The ratio estimate over windows of a plain `.json` array whose elements each start a line
    (`element_mark`); None for an array on one line."""
    with open_regular(path) as f:
        mark = element_mark(f.read(PIECE))
    if mark is None:
        return None
    figures = []
    with open_regular(path) as f, tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        step = (size - WINDOW_BYTES) / (WINDOWS - 1)
        for k in range(WINDOWS):
            text = _lines_at(f, round(k * step), mark)
            figures.append((*_read_window(Path(tmp), path.name, text, fmt, array=True), len(text)))
    return _ratio_estimate(figures, size)


def prefix(path: Path, size: int, gzipped: bool, fmt: str) -> Part | None:
    """The estimate from the file's first PREFIX_BYTES of text (PREFIX_RECORDS records at most), scaled by
    its size; None when that text is all of it (a gzip: read it whole)."""
    with open_regular(path) as f:
        text, used, complete = _inflated_start(f) if gzipped else (f.read(PREFIX_BYTES), 0, False)
    if complete:  # a gzip whose whole text fitted the prefix: read it whole instead
        return None
    full = len(text)
    text = text[:_first(text, b"{", PREFIX_RECORDS)]
    end = text.rfind(b"\n") + 1 or len(text)
    used = used * end / full if gzipped and full else end
    with tempfile.TemporaryDirectory(prefix="tunegate-sample-") as tmp:
        chars, records, moments = _read_sample(Path(tmp), path.name, text[:end], fmt, moments=True)
    if not used:
        return None
    return _scaled(chars, records, moments, size / used, "the file's start, assuming the rest is alike")


def parquet_start(path: Path, fmt: str) -> Part | None:
    """The estimate from a parquet file's first PREFIX_RECORDS rows, scaled by the row count its footer
    holds; exact when it has no more rows; None when the footer cannot be read."""
    from tunegate.dataset.records import iter_chats

    try:
        import pyarrow.parquet as pq

        total = pq.ParquetFile(path).metadata.num_rows
    except (ImportError, ValueError, OSError):  # pyarrow's ArrowInvalid is a ValueError
        return None
    chars = records = 0
    squares = 0.0
    for record in iter_chats(path, fmt):
        if record.index >= PREFIX_RECORDS:
            return _scaled(chars, records, squares, total / record.index, "the file's first rows, assuming the "
                           "rest is alike")
        n = record.char_count()
        chars, records, squares = chars + n, records + 1, squares + n * n
    return Part(chars, records)


def _scaled(chars: int, records: int, squares: float, scale: float, how: str) -> Part:
    """A sample's characters and records times `scale`, with the variance of its mean record's characters."""
    if not records:  # no record of the sample holds a chat: none of the rest is assumed to
        return Part(0, 0, 0, 0.0, how)
    mean = chars / records
    spread = math.sqrt(max(squares / records - mean ** 2, 0.0)) if records > 1 else 0.0
    kept = max(0.0, 1.0 - 1.0 / scale)  # the finite-population correction
    total = chars * scale
    variance = (total * spread / max(mean, 1e-9)) ** 2 * kept / records
    return Part(total, records * scale, records, variance, how)


def _inflated_start(f) -> tuple[bytes, int, bool]:  # noqa: ANN001 (an open binary file)
    """Up to PREFIX_BYTES of a gzip file's text, the compressed bytes they came from, and whether that
    is all of it. Inflated here rather than through the dataset reader, which cannot say how many
    compressed bytes a given output cost; PREFIX_BYTES bounds the output, so a bomb costs no more."""
    out, used, inflater = [], 0, zlib.decompressobj(GZIP)
    have, pending = 0, b""
    while have < PREFIX_BYTES:
        if not pending:
            pending = f.read(PIECE)
            if not pending:
                return b"".join(out), used, True
        if inflater.eof:  # the next member of a multi-member gzip, after any zero padding
            stripped = pending.lstrip(b"\x00")
            used, pending = used + len(pending) - len(stripped), stripped
            if pending:
                inflater = zlib.decompressobj(GZIP)
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


def _first(text: bytes, mark: bytes, n: int) -> int:
    """Where the `n`-th `mark` in `text` ends (len(text) when there are fewer)."""
    at = 0
    for _ in range(n):
        found = text.find(mark, at)
        if found < 0:
            return len(text)
        at = found + len(mark)
    return at
