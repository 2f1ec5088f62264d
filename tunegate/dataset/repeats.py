"""Records whose bytes repeat an earlier record of the file (TG210): in memory, or past a size on disk.

    repeats = RepeatedRecords(out, "train.jsonl", on_repeat)
    repeats.see(key, line, index)        # every record, in file order (or `replay` a part's log)
    repeats.finish()                     # after the file's last record; then `close()`, always

Up to `repeat_records()` records the index is the compiled map of every key's first line (21-43
bytes a record), and each repeat is reported as it is read. Past it the map goes to disk
(tunegate.dataset.repeat_spill) with every later record's key, and `finish` finds the rest of the
repeats there by a bucketed join, then reports them where one read would have: each TG210 is put
back among the file's findings at the place it would have had (the findings kept and the codes
counted by the time its record was read, kept as a few marks), so the report is the same.
"""
from __future__ import annotations

import os
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from typing import Any

from tunegate.dataset.repeat_spill import RepeatSpill
from tunegate.native import compiled
from tunegate.report import Finding, FindingCollector

REPEATS_VARIABLE = "TUNEGATE_REPEAT_SPILL_RECORDS"
# Records whose keys stay in memory: the compiled map holds 2**20 slots of 16 bytes (16 MB) up to
# 786,431 keys (three quarters full); beyond, the keys go to disk. A million keys took 2**21 slots,
# and growing to them held both tables for a moment (48 MB). (Without the extension a dict holds
# ~110 bytes a key.)
REPEAT_RECORDS = 500_000
CODE = "TG210"


def repeat_records() -> int:
    """Records a file's TG210 index holds in memory before it goes to disk (the environment may lower it)."""
    try:
        return max(1, int(os.environ.get(REPEATS_VARIABLE, REPEAT_RECORDS)))
    except ValueError:
        return REPEAT_RECORDS


class RepeatedRecords:
    """Records whose bytes (surrounding whitespace aside) repeat an earlier record of the file (TG210)."""

    def __init__(self, out: FindingCollector, file: str, on_repeat: Callable[[int], Any] | None = None):
        self.out, self.file = out, file
        self.on_repeat = on_repeat  # told the index of every exact repeat reported here
        # hash of a record's bytes -> the line it first appeared on: one key per record, so the
        # compiled map where it is built (21-43 bytes a record; a dict takes ~110)
        self.first_line: Any = compiled.FirstSeen() if compiled is not None else {}
        # an extension built before FirstSeen.dump cannot hand its keys over: it keeps them all
        self.limit = repeat_records() if hasattr(self.first_line, "dump") or type(self.first_line) is dict \
            else 1 << 62
        self.duplicates = 0
        self.spill: RepeatSpill | None = None
        self.marks: list[tuple[int, int, int]] = []  # (record, findings kept, codes counted) from the spill on
        self._kept = self._codes = -1  # the last mark's
        self.reader: Any = None  # its `column`: where the record being seen starts on its line

    def see(self, key: int, line: int, index: int) -> None:
        first = self.first_line.setdefault(key, line)
        if first != line:
            self._repeat(first, line, index)
        elif index >= self.limit:
            self.spill_now()

    def replay(self, log: Any, lines: int, records: int) -> None:
        """`see` every record of a part's log (a KeyLog), its places shifted to the whole file's."""
        if compiled is None:  # setdefault as `see` does, never spilling halfway (see `room_for`)
            for key, line, index in zip(log.keys, log.lines, log.indexes):
                first = self.first_line.setdefault(key, line + lines)
                if first != line + lines:
                    self._repeat(first, line + lines, index + records)
            return
        for i, first in self.first_line.repeats(log.keys, log.lines, lines):  # one compiled pass
            self._repeat(first, log.lines[i] + lines, log.indexes[i] + records)

    def room_for(self, count: int) -> bool:
        """Whether `count` more keys fit in memory; if not, the index goes to disk now."""
        if self.spill is None and len(self.first_line) + count > self.limit:
            self.spill_now()
        return self.spill is None

    def _repeat(self, first: int, line: int, index: int) -> None:
        self.duplicates += 1
        if self.on_repeat is not None:
            self.on_repeat(index)
        if self.out.full(CODE):  # past the cap: count, do not explain (10M repeats show 20)
            self.out.count(CODE, "warning")
            return
        self.out.add(CODE, "warning", *_said(first), file=self.file, line=line, column=1, record=index)

    # -- past the budget: the keys on disk ------------------------------------------------------

    def spill_now(self) -> None:
        """Hand the map's keys to a file; from now on each record's key goes there too."""
        if type(self.first_line) is dict:
            from array import array

            keys, lines = array("Q", self.first_line).tobytes(), array("q", self.first_line.values()).tobytes()
        else:
            keys, lines = self.first_line.dump()
        self.first_line = None  # freed before the file is written
        self.spill = RepeatSpill(keys, lines)
        self.see = self._see_spilled  # type: ignore[method-assign]

    def _see_spilled(self, key: int, line: int, index: int) -> None:
        out = self.out
        if len(out.kept) != self._kept or len(out.totals) != self._codes:  # seldom: findings are capped
            self._kept, self._codes = len(out.kept), len(out.totals)
            self.mark(index, self._kept, self._codes)
        self.spill.add(key, line, index, 1 if self.reader is None else self.reader.column)  # type: ignore[union-attr]

    def mark(self, index: int, kept: int, codes: int) -> None:
        """From record `index` on a repeat's TG210 follows the first `kept` findings and `codes` codes counted.

        Keyed by record, not line: the records of a JSON array may share a line."""
        if not self.marks or self.marks[-1][1:] != (kept, codes):
            self.marks.append((index, kept, codes))

    def finish(self) -> None:
        """Report the repeats the disk holds, each where one read would have put it."""
        if self.spill is None:
            return
        spill, self.spill = self.spill, None
        try:
            had = CODE in self.out.totals
            shown, first_codes = [], None
            room = max(0, self.out.cap - self.out.totals[CODE])
            for indexes, lines, firsts, columns in spill.repeats():
                if first_codes is None:
                    first_codes = self._marked(int(indexes[0]))[1]
                self.duplicates += len(indexes)
                if self.on_repeat is not None:
                    for index in indexes.tolist():
                        self.on_repeat(index)
                take = min(room - len(shown), len(indexes))
                shown += zip(indexes[:take].tolist(), lines[:take].tolist(), firsts[:take].tolist(),
                             columns[:take].tolist())
                self.out.totals[CODE] += len(indexes)
        finally:
            spill.close()
        if first_codes is None:
            return
        self.out.severities[CODE] = "warning"
        if not had:  # the code is counted where its first repeat was read, among the others
            self.out.totals = _placed(self.out.totals, first_codes)
        self._show(shown)

    def _show(self, shown: list[tuple[int, int, int, int]]) -> None:
        for n, (index, line, first, column) in enumerate(shown):
            finding = Finding(code=CODE, severity="warning", stage=self.out.stage, message=_said(first)[0],
                              hint=_said(first)[1], file=self.file, line=line, column=column, record=index)
            self.out.kept.insert(self._marked(index)[0] + n, finding)

    def _marked(self, index: int) -> tuple[int, int]:
        """(findings kept, codes counted) before the repeat that is record `index`."""
        at = bisect_right([m[0] for m in self.marks], index) - 1
        return self.marks[max(at, 0)][1:]

    def close(self) -> None:
        """Remove the files on disk, if any (also when the read failed)."""
        if self.spill is not None:
            self.spill.close()
            self.spill = None


def _said(first: int) -> tuple[str, str]:
    return (f"record is identical to the one on line {first}",
            "Drop the repeat: duplicates weigh those examples double in training.")


def _placed(totals: Counter[str], at: int) -> Counter[str]:
    """The totals with CODE moved to position `at`, as one read would have counted it."""
    items = [(code, n) for code, n in totals.items() if code != CODE]
    return Counter(dict(items[:at] + [(CODE, totals[CODE])] + items[at:]))
