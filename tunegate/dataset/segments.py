"""A data file in parts: byte ranges that start just after a newline, each read on its own.

    ranges = cut(Path("train.jsonl"), size=8 << 20)        # [(0, 8_388_653), (8_388_653, ...), ...]
    reader = PartReader(path, collector, start, end)       # in a worker: tunegate.dataset.stage.read_part

Every line lies whole in one part and the parts together are the file. A part reads its lines with
the dataset stage's own reader and checks (the same findings, the same observers), but knows its
lines and records only from its own start: the dataset stage shifts them when it merges the parts
in file order, and replays each record's key (a hash of its bytes) against the whole
file's record index, so a repeat across parts is found at the same place as in one read.
"""
from __future__ import annotations

import heapq
import os
from array import array
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

from tunegate import formats
from tunegate.dataset.jsonl_reader import JsonlReader, _foreign_format, _starts_document  # the same start checks
from tunegate.dataset.records import BOM, GZIP_MAGIC, unreadable
from tunegate.dataset.repeats import RepeatedRecords
from tunegate.file_kinds import kind
from tunegate.report import FindingCollector

_BUFFER = 1 << 20
_FIRST_LOOK = 1 << 16  # where a part's end is looked for first: a 1 MiB read at every cut cost ~1 % of a check
_HEAD = 1 << 20  # how far the file's first record is looked for
_BLANK = b" \t\r\n"


def splittable(path: Path, observers: list[Any] | Any, fmt: str) -> formats.FileFormat | None:
    """The file's format as its first record fixes it, when the file can be read in parts; else None.

    Parts need a plain JSONL file (not gzip, another encoding, a JSON document or array, parquet, Arrow, CSV),
    observers that ride along in parts, and a first record whose format is known (or a declared
    format): each part then checks its records against the format one read would have fixed.
    """
    if not all(hasattr(o, "part") for o in observers) or unreadable(path):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return None
    if head.startswith(GZIP_MAGIC) or kind(path.name, head) != "jsonl" or _foreign_format(head[:6]):
        return None
    file_format = formats.FileFormat(fmt)
    for line, raw in enumerate(head.removeprefix(BOM).split(b"\n")[:-1], 1):
        if not raw.strip(_BLANK):
            continue
        if _starts_document(raw):
            return None
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if type(record) is not dict:
            return None
        if file_format.format is None:
            file_format.of(record, line)  # what the first record fixes in one read
        return file_format if file_format.format is not None else None
    return None


def cut(path: Path, size: int, tail: int = 0, least: int = 1 << 20) -> list[tuple[int, int]]:
    """Byte ranges of about `size` bytes covering the file, each ending just after a newline.

    With `tail` > 0 the last `tail` x `size` bytes are cut finer, into quarters of `size` (at
    least `least` bytes): workers that finish together waste less time waiting on the last part.
    """
    total = os.path.getsize(path)
    if total <= size:
        return [(0, total)]
    fine_from = total - tail * size if tail else total
    bounds = [0]
    with open(path, "rb", buffering=0) as f:
        while True:
            step = size if bounds[-1] < fine_from else max(least, size // 4)
            if bounds[-1] + step >= total:
                break
            newline = _next_newline(f, bounds[-1] + step - 1)
            if newline < 0 or newline + 1 >= total:
                break
            bounds.append(newline + 1)
    bounds.append(total)
    return list(zip(bounds, bounds[1:]))


def _next_newline(f: BinaryIO, at: int) -> int:
    """Offset of the first newline at or after `at`, -1 if none: read in blocks, so a huge line costs
    time to scan (memchr speed) but no memory (a memory map would count every page in RSS). The
    first block is small (a line is a few kB), later ones grow to _BUFFER."""
    f.seek(at)
    size = _FIRST_LOOK
    while True:
        block = f.read(size)
        if not block:
            return -1
        found = block.find(b"\n")
        if found >= 0:
            return at + found
        at += len(block)
        size = min(size * 4, _BUFFER)


class KeyLog:
    """Stands in for the file's RepeatedRecords inside a part: keeps every record's key and place."""

    def __init__(self) -> None:
        self.keys, self.lines, self.indexes = array("Q"), array("q"), array("q")
        self.duplicates = 0  # counted when the log is replayed

    def see(self, key: int, line: int, index: int) -> None:
        self.keys.append(key)
        self.lines.append(line)
        self.indexes.append(index)


class Part(NamedTuple):
    """One byte range of a file to read, with fresh copies of the observers' parts."""

    role: str
    path: str
    start: int
    end: int
    cap: int
    observers: list[Any]  # each observer's `part(role)`: observe() like it, then payload()
    file_format: formats.FileFormat  # as the file's first record fixed it (see splittable)
    trains_all: bool = False  # training.loss_on: all (see RecordChecks)


class PartResult(NamedTuple):
    out: FindingCollector  # lines and records relative to the part's start
    stats: Any  # SplitStats
    keys: KeyLog
    lines: int
    records: int
    blank_lines: int
    failure: tuple[int, str] | None  # (relative line after which reading failed, why)
    payloads: list[Any]


class PartReader(JsonlReader):
    """The strict reader over one byte range; file-level checks (BOM, emptiness) stay with part 0 or the merge."""

    def __init__(self, path: Path, out: FindingCollector, start: int, end: int):
        super().__init__(path, out)
        self.start = start
        self.budget = end - start
        self.holds_first_record = start == 0
        self.failure: tuple[int, str] | None = None

    def _open(self) -> BinaryIO | None:
        if self.start == 0:  # the BOM and start-of-file checks, as in one read
            stream = super()._open()
            if self.bom:
                self.budget -= len(BOM)
            return stream
        raw = open(self.path, "rb", buffering=_BUFFER)  # noqa: SIM115 (closed by records())
        raw.seek(self.start)
        self._raw = raw
        return raw

    def read_failed(self, n: int, exc: BaseException) -> None:
        self.failure = (n, str(exc))  # the merge reports it with the line counted from the file's start

    def _report_emptiness(self) -> None:
        pass  # a part may hold no record; whether the file holds none is the merge's to say


def absorb_part(out: FindingCollector, got: PartResult, repeats: RepeatedRecords, lines: int, records: int) -> None:
    """A part's findings placed in the whole file and taken into `out`, with the repeats of earlier
    records it holds (TG210): found now while the file's index is in memory, else after the read."""
    moved = [f.model_copy(update={"line": f.line + lines, "record": None if f.record is None else f.record + records})
             if f.line is not None else f for f in got.out.kept]
    merged = FindingCollector(got.out.stage, got.out.cap)
    if repeats.room_for(len(got.keys.keys)):
        repeated = FindingCollector(got.out.stage, got.out.cap)
        repeats.out = repeated
        repeats.replay(got.keys, lines, records)
        # In one read a record's repeat (TG210) is reported after its other findings: a stable merge by line.
        merged.kept = list(heapq.merge(moved, repeated.kept, key=lambda f: f.line or 0))
        merged.totals = got.out.totals + repeated.totals
        merged.severities = {**got.out.severities, **repeated.severities}
        out.absorb(merged)
        return
    merged.kept, merged.totals, merged.severities = moved, got.out.totals, got.out.severities
    base = len(out.kept)
    out.absorb(merged)
    repeats.out = out
    from tunegate.dataset.numeric import np  # numpy: only once a file's index is on disk

    keys = got.keys
    at_lines = np.frombuffer(keys.lines, dtype="<i8") + lines
    at_indexes = np.frombuffer(keys.indexes, dtype="<i8") + records
    _mark_part(repeats, moved, out.kept[base:], at_lines, at_indexes, base, len(out.totals))
    repeats.spill.add_many(np.frombuffer(keys.keys, dtype="<u8"), at_lines, at_indexes)  # type: ignore[union-attr]


def _mark_part(repeats: RepeatedRecords, moved: list[Any], kept: list[Any], at_lines: Any, at_indexes: Any,
               base: int, codes: int) -> None:
    """Where each of the part's repeats would have been merged (the stable merge by line above): after
    the moved findings up to the first whose line passes the repeat's, of which `kept` survived; each
    mark keyed by the first of the part's records (lines `at_lines`, keys `at_indexes`) it holds for."""
    alive = {id(f) for f in kept}
    if not len(at_lines):
        return
    repeats.mark(int(at_indexes[0]), base, codes)
    top = 0
    for f in moved:
        top = max(top, f.line or 0)
        base += id(f) in alive
        at = int(at_lines.searchsorted(top, side="left"))  # the part's first record on or past line `top`
        repeats.mark(int(at_indexes[at]) if at < len(at_lines) else int(at_indexes[-1]) + 1, base, codes)
