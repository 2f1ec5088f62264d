"""Statistics of one data file: turns per record, characters per role, role distribution.

Memory stays bounded: lengths are appended to short lists in the hot loop and folded into exact
value counts every `FOLD_EVERY` records. The count tables hold one entry per DISTINCT length, and k
distinct lengths need at least k^2/2 characters of text, so a 2 GB file holds at most ~63k entries.
Quantiles are exact (nearest rank).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from tunegate.dataset.contract import ROLES

FOLD_EVERY = 1 << 14  # records between folds: keeps the pending lists a few hundred KB


class SplitStats:
    """Accumulates one file's statistics; `lengths` and `turns` are appended to directly."""

    def __init__(self) -> None:
        self.lengths: dict[str, list[int]] = {role: [] for role in ROLES}
        self.turns: list[int] = []
        self._length_counts: dict[str, Counter[int]] = {role: Counter() for role in ROLES}
        self._turn_counts: Counter[int] = Counter()
        # Records that are language-modeling text ({"text": ...}, TG271): a trainer of plain text trains them.
        self.text_records = 0

    def fold(self) -> None:
        """Move the pending lists into the count tables (Counter.update counts in C)."""
        for role, pending in self.lengths.items():
            self._length_counts[role].update(pending)
            pending.clear()
        self._turn_counts.update(self.turns)
        self.turns.clear()

    def absorb(self, later: SplitStats) -> None:
        """Add the counts of another part of the same file (counts add up; order does not matter).
        A worker's part arrives unfolded: its pending lists are counted in C, where adding its count
        tables (which a part has only past FOLD_EVERY records) goes key by key in Python (~0.1 CPU s
        of a 440 MB check's merge)."""
        for role, pending in later.lengths.items():
            self._length_counts[role].update(pending)
        self._turn_counts.update(later.turns)
        for role, counts in later._length_counts.items():
            self._length_counts[role].update(counts)
        self._turn_counts.update(later._turn_counts)
        self.text_records += later.text_records

    def summary(self) -> dict[str, Any]:
        """turns, chars_per_role and roles, as the report shows them."""
        self.fold()
        chars = {role: summarize(c) for role, c in self._length_counts.items() if c}
        roles = {role: sum(c.values()) for role, c in self._length_counts.items()}
        content = sum(n * k for c in self._length_counts.values() for n, k in c.items())
        text = {"text_records": self.text_records} if self.text_records else {}
        return {"turns": summarize(self._turn_counts), "chars_per_role": chars, "roles": roles,
                "content_chars": content, **text}


def summarize(counts: Counter[int]) -> dict[str, int]:
    """min / median / p95 / max of a value -> count table (nearest-rank quantiles); {} when empty."""
    total = sum(counts.values())
    if not total:
        return {}
    values = sorted(counts)
    out = {"min": values[0], "median": values[-1], "p95": values[-1], "max": values[-1]}
    ranks = [("median", (total + 1) // 2), ("p95", -(-95 * total // 100))]
    seen = 0
    for value in values:
        seen += counts[value]
        while ranks and seen >= ranks[0][1]:
            out[ranks.pop(0)[0]] = value
        if not ranks:
            break
    return out
