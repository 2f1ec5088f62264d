"""The exact-overlap joins, wherever the splits' hashes are: in memory or, once spilled, on disk.

    for match in duplicates(train, validation): ...    # exact.cross_duplicates' Matches, in its order
    for match in leaks(train, validation): ...         # exact.prompt_leaks'
    for group in repeat_groups(train, reported): ...   # exact.repeats'

While both splits hold their hashes in memory these are the in-memory joins of
tunegate.overlap.exact; once a split has spilled, the bucketed joins of tunegate.overlap.buckets,
which import numpy, so a small check never loads it for them.
"""
from __future__ import annotations

from collections.abc import Iterable

from tunegate.overlap.exact import Match, Repeat, SplitHashes, cross_duplicates, prompt_leaks, repeats
from tunegate.overlap.reported import ReportedKeys


def duplicates(train: SplitHashes, val: SplitHashes) -> Iterable[Match]:
    """Validation records whose normalised text is also in train (see exact.cross_duplicates)."""
    if not (train.spilled or val.spilled):
        return cross_duplicates(train, val)
    from tunegate.overlap.buckets import spilled_duplicates

    return spilled_duplicates(train, val)


def leaks(train: SplitHashes, val: SplitHashes) -> Iterable[Match]:
    """Validation records whose prompt is in train with another answer (see exact.prompt_leaks)."""
    if not (train.spilled or val.spilled):
        return prompt_leaks(train, val)
    from tunegate.overlap.buckets import spilled_leaks

    return spilled_leaks(train, val)


def repeat_groups(split: SplitHashes, reported: ReportedKeys) -> Iterable[Repeat]:
    """Groups of identical records inside one split (see exact.repeats)."""
    if not split.spilled:
        return repeats(split, reported=reported)
    from tunegate.overlap.buckets import spilled_repeats

    return spilled_repeats(split, reported)
