"""The exact-overlap joins, wherever the splits' hashes are: in memory or, once spilled, on disk.

    for match in duplicates(train, validation): ...    # exact.cross_duplicates' Matches, in its order
    for match in leaks(train, validation): ...         # exact.prompt_leaks'
    for group in repeat_groups(train, reported): ...   # exact.repeats'

While validation holds its hashes in memory the joins between the splits are those of
tunegate.overlap.exact, which read a spilled train split's file a chunk at a time past validation's
keys; the repeats inside a spilled split are grouped from its whole-record column while that is at
most `exact.WHOLE_COLUMN_RECORDS` records. Beyond (a spilled validation split, a bigger column) the
bucketed joins of tunegate.overlap.buckets run, in fixed memory. Only a spilled split imports numpy
for them, so a small check never loads it.
"""
from __future__ import annotations

from collections.abc import Iterable

from tunegate.overlap.exact import (
    Match,
    Repeat,
    SplitHashes,
    cross_duplicates,
    prompt_leaks,
    repeats,
    spilled_repeats_in_memory,
)
from tunegate.overlap.reported import ReportedKeys


def duplicates(train: SplitHashes, val: SplitHashes) -> Iterable[Match]:
    """Validation records whose normalised text is also in train (see exact.cross_duplicates)."""
    if not val.spilled:
        return cross_duplicates(train, val)
    from tunegate.overlap.buckets import spilled_duplicates

    return spilled_duplicates(train, val)


def leaks(train: SplitHashes, val: SplitHashes) -> Iterable[Match]:
    """Validation records whose prompt is in train with another answer (see exact.prompt_leaks)."""
    if not val.spilled:
        return prompt_leaks(train, val)
    from tunegate.overlap.buckets import spilled_leaks

    return spilled_leaks(train, val)


def repeat_groups(split: SplitHashes, reported: ReportedKeys) -> Iterable[Repeat]:
    """Groups of identical records inside one split (see exact.repeats)."""
    if not split.spilled:
        return repeats(split, reported=reported)
    found = spilled_repeats_in_memory(split, reported)
    if found is not None:
        return found
    from tunegate.overlap.buckets import spilled_repeats

    return spilled_repeats(split, reported)
