"""A part's canonical lines, made again in the gate's process from the part's own bytes in the file.

    numbers, own = array("q"), []      # in a worker: per record its line in the part, or -1-k for own[k]
    hash_part(digest.update, (path, start, end), numbers, own)   # in the gate's process, parts in order

The digest is one SHA-256 stream over every record's canonical line in file order, so the gate's
process hashes every part. A worker used to write each part's canonical lines to shared memory for
it (~2 copies, the pages mapped and unmapped: ~0.2 CPU s at 200 MB besides the hashing). A record
whose canonical line comes straight from its JSONL line (tunegate/native/canonical.c) needs only
its line number: this process maps the part (the page cache's own pages, no copy) and copies the
lines from there in one compiled call a part. Only the other records' lines (another format,
numbers made exact, a line canonical.c leaves to orjson) travel as bytes.
"""
from __future__ import annotations

import contextlib
import mmap
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from tunegate.dataset.records import BOM
from tunegate.errors import UnreadableRecord
from tunegate.native import compiled
from tunegate.pathguard import shown

# An extension built before canonical_lines existed: every line then travels as bytes.
from_file = getattr(compiled, "canonical_lines", None)


def hash_part(update: Callable[[Any], Any], span: tuple[str, int, int], numbers: array,
              own: Sequence[Any]) -> None:
    """Feed `update` the canonical lines of a part's records, in order: numbers[i] >= 0 is the line
    (1-based, in the part) whose own bytes make its canonical line; -1 - k stands for own[k].

    Raises UnreadableRecord when the part's lines are no longer there (the file changed during the read).
    """
    if max(numbers, default=-1) < 0:  # nothing to read: every line handed over
        for n in numbers:
            update(own[-1 - n])
        return
    path, start, end = span
    try:
        with _mapped(path, start, end) as (data, at):
            _hash_lines(update, data, at, numbers, own)
    except (OSError, ValueError, orjson.JSONDecodeError):
        raise UnreadableRecord(f"{shown(path)} changed while it was read: its fingerprint cannot be "
                               "taken; check it again once it is written") from None


def _hash_lines(update: Callable[[Any], Any], data: mmap.mmap, at: int, numbers: array, own: Sequence[Any]) -> None:
    """The loop of `hash_part` over a mapped part that starts at byte `at` of `data`."""
    i, line, count = 0, 1, len(numbers)
    while i < count:
        if numbers[i] < 0:
            update(own[-1 - numbers[i]])
            i += 1
            continue
        chunk, i, at, line = from_file(data, numbers, i, at, line)  # type: ignore[misc]
        update(chunk)
        if i < count and numbers[i] >= 0:  # a line canonical.c leaves to orjson: at and line are its start
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end + 1
            update(_serialised(data[at:end]))
            i, at, line = i + 1, end, line + 1


def _serialised(raw: bytes) -> bytes:
    """The canonical line of the record a worker parsed from `raw` (as it did: orjson, unchanged)."""
    from tunegate.dataset.fingerprint import canonical_line

    return canonical_line(orjson.loads(raw))


@contextlib.contextmanager
def _mapped(path: str, start: int, end: int) -> Iterator[tuple[mmap.mmap, int]]:
    """The file's bytes [start, end) mapped read-only: (the map, where the part's first line starts
    in it). The map begins at a page boundary; a BOM at the file's start is skipped, as the reader does."""
    base = start - start % mmap.ALLOCATIONGRANULARITY
    with open(path, "rb") as f, mmap.mmap(f.fileno(), end - base, offset=base, access=mmap.ACCESS_READ) as data:
        at = start - base
        if start == 0 and data[:len(BOM)] == BOM:
            at += len(BOM)
        yield data, at
