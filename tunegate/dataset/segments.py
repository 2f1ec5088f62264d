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

import os
from array import array
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from tunegate.dataset.jsonl_reader import JsonlReader
from tunegate.dataset.records import BOM
from tunegate.report import FindingCollector

_BUFFER = 1 << 20


def cut(path: Path, size: int) -> list[tuple[int, int]]:
    """Byte ranges of about `size` bytes covering the file, each ending just after a newline."""
    total = os.path.getsize(path)
    if total <= size:
        return [(0, total)]
    bounds = [0]
    with open(path, "rb", buffering=0) as f:
        while bounds[-1] + size < total:
            newline = _next_newline(f, bounds[-1] + size - 1)
            if newline < 0 or newline + 1 >= total:
                break
            bounds.append(newline + 1)
    bounds.append(total)
    return list(zip(bounds, bounds[1:]))


def _next_newline(f: BinaryIO, at: int) -> int:
    """Offset of the first newline at or after `at`, -1 if none: read in blocks, so a huge line costs
    time to scan (memchr speed) but no memory (a memory map would count every page in RSS)."""
    f.seek(at)
    while True:
        block = f.read(_BUFFER)
        if not block:
            return -1
        found = block.find(b"\n")
        if found >= 0:
            return at + found
        at += len(block)


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
