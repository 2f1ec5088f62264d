"""A part's canonical lines, made again in the gate's process from the part's own bytes in the file.

    numbers, own = array("q"), []      # in a worker: per record its line in the part, or -1-k for own[k]
    hash_part(digest.update, (path, start, end, stamp_of(path)), numbers, own, buffer, canonical_line)

The digest is one hash stream over every record's canonical line in file order, so the gate's
process hashes every part. A worker used to write each part's canonical lines to shared memory for
it (~2 copies, the pages mapped and unmapped: ~0.2 CPU s at 200 MB besides the hashing). A record
whose canonical line comes straight from its JSONL line (tunegate/native/canonical.c) needs only
its line number: this process reads the part again (from the page cache, into one buffer kept for
the whole read) and copies the lines from there in one compiled call a part. Only the other
records' lines (another format, numbers made exact, a line canonical.c leaves to orjson) travel
as bytes. The part is read, not mapped: a file cut short under a map would kill the process
(SIGBUS), where a short read is a refusal (UnreadableRecord). So is a file written or replaced
since the worker began its part (its inode, size or modification time changed): the digest must
cover the bytes the checks saw.
"""
from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from tunegate.dataset.records import BOM
from tunegate.errors import UnreadableRecord
from tunegate.native import compiled
from tunegate.pathguard import shown

# An extension built before canonical_lines existed: every line then travels as bytes.
from_file = getattr(compiled, "canonical_lines", None)


def hash_part(update: Callable[[Any], Any], span: tuple[Any, ...], numbers: array, own: Sequence[Any],
              buffer: bytearray, serialise: Callable[[Any], bytes]) -> None:
    """Feed `update` the canonical lines of a part's records, in order: numbers[i] >= 0 is the line
    (1-based, in the part) whose own bytes make its canonical line; -1 - k stands for own[k]. What
    `update` is given may be a view of `buffer`, lent for the call (a digest's update hashes or copies it).
    `buffer` holds the part's bytes and after them its canonical lines while they are needed (grown
    to twice the largest part, kept); `serialise` is the fingerprint's canonical_line, for a line
    canonical.c leaves to orjson.

    Raises UnreadableRecord when the part's lines are no longer there (the file changed during the read).
    """
    if max(numbers, default=-1) < 0:  # nothing to read: every line handed over
        for n in numbers:
            update(own[-1 - n])
        return
    path, start, end, stamp = span
    try:
        size = _read_into(buffer, path, start, end, stamp)
        at = len(BOM) if start == 0 and buffer[:len(BOM)] == BOM else 0  # skipped, as the reader does
        if len(buffer) < 2 * size + len(numbers):  # the canonical lines are made after the bytes: room for all
            buffer.extend(bytes(2 * size + len(numbers) - len(buffer)))
        with memoryview(buffer) as whole, whole[:size] as data, whole[size:] as lines:
            _hash_lines(update, data, buffer, at, numbers, own, serialise, lines)
    except (OSError, ValueError, orjson.JSONDecodeError):
        raise UnreadableRecord(f"{shown(path)} changed while it was read: its fingerprint cannot be "
                               "taken; check it again once it is written") from None


def stamp_of(path: str) -> tuple[int, int, int]:
    """What changes when a file is written or replaced: its inode, size and modification time."""
    return _stamp(os.stat(path))


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read_into(buffer: bytearray, path: str, start: int, end: int, stamp: tuple[int, int, int] | None) -> int:
    """Bytes [start, end) of the file into `buffer` (grown when too small); their count. ValueError
    when the file is no longer the one `stamp` (taken where the worker began its part) describes:
    the bytes read here must be the bytes the worker checked."""
    size = end - start
    if len(buffer) < size:
        buffer.extend(bytes(size - len(buffer)))
    with open(path, "rb", buffering=0) as f, memoryview(buffer)[:size] as into:
        if stamp is not None and _stamp(os.fstat(f.fileno())) != stamp:
            raise ValueError("the file was written since its part was read")
        f.seek(start)
        got = 0
        while got < size:
            n = f.readinto(into[got:])
            if not n:
                raise ValueError("the file is shorter than when it was read")
            got += n
    return size


def _hash_lines(update: Callable[[Any], Any], data: memoryview, buffer: bytearray, at: int, numbers: array,
                own: Sequence[Any], serialise: Callable[[Any], bytes], lines: memoryview) -> None:
    """The loop of `hash_part` over a part's bytes (`data`, the start of `buffer`) from byte `at`;
    `lines`, the rest of `buffer`, is where each run of canonical lines is made before it is hashed."""
    i, line, count, size = 0, 1, len(numbers), len(data)
    while i < count:
        if numbers[i] < 0:
            update(own[-1 - numbers[i]])
            i += 1
            continue
        made, i, at, line = from_file(data, numbers, i, at, line, lines)  # type: ignore[misc]
        with lines[:made] as chunk:
            update(chunk)
        if i < count and numbers[i] >= 0:  # a line canonical.c leaves to orjson: at and line are its start
            end = buffer.find(b"\n", at, size)
            end = size if end < 0 else end + 1
            update(serialise(orjson.loads(data[at:end])))  # the record the worker parsed: orjson's, unchanged
            i, at, line = i + 1, end, line + 1

