"""Exact overlap between splits, from hashes taken during the dataset stage's single read.

`OverlapObserver` rides along the dataset stage: for every record it keeps three 16-byte BLAKE2b
hashes of the normalised record (whole record, prompt, answer; see tunegate.overlap.normalize) and the
record's line and index: 64 bytes a record, never its text. After the read, the functions below
match the hashes: train/validation duplicates, prompt leakage and duplicates inside train.
"""
from __future__ import annotations

import hashlib
import time
from array import array
from collections.abc import Iterator
from typing import Any, NamedTuple

from tunegate.overlap.normalize import NormalRecord, normalise_record

NO_HASH = bytes(16)  # stands for "no prompt" / "no answer"; BLAKE2b never yields 16 zero bytes in practice
_WIDTH = 16


def text_hash(text: str) -> bytes:
    """16-byte BLAKE2b of a normalised text (lone surrogates pass through rather than raise)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=_WIDTH).digest()


class SplitHashes:
    """The hashes and places of one split's records, in file order, in flat arrays."""

    def __init__(self) -> None:
        self.full = bytearray()
        self.prompt = bytearray()
        self.answer = bytearray()
        self.lines = array("q")
        self.indexes = array("q")
        self.seen = 0  # every record observed
        self.skipped = 0  # records without readable messages (the dataset stage reports them)

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, line: int, index: int, norm: NormalRecord) -> None:
        full, prompt, answer = record_hashes(norm)
        self.full += full
        self.prompt += prompt if norm.prompt and norm.answer is not None else NO_HASH
        self.answer += answer
        self.lines.append(line)
        self.indexes.append(index)


def record_hashes(norm: NormalRecord) -> tuple[bytes, bytes, bytes]:
    """(whole record, prompt, answer) hashes; the whole is hashed from the two parts, so each
    character is hashed once. A record without an answer gets NO_HASH as its answer."""
    prompt = text_hash(norm.prompt)
    answer = NO_HASH if norm.answer is None else text_hash(norm.answer)
    return hashlib.blake2b(prompt + answer, digest_size=_WIDTH).digest(), prompt, answer


def hashes(column: bytearray) -> Iterator[bytes]:
    """The 16-byte hashes of a column, one per record."""
    data = bytes(column)
    return (data[i:i + _WIDTH] for i in range(0, len(data), _WIDTH))


def hash_at(column: bytearray, position: int) -> bytes:
    return bytes(column[position * _WIDTH:(position + 1) * _WIDTH])


class OverlapObserver:
    """A dataset-stage observer that hashes every record for the overlap stage."""

    def __init__(self) -> None:
        self.splits: dict[str, SplitHashes] = {}
        self.finished: set[str] = set()  # roles whose file was read to the end
        # Lines the dataset stage already reported as byte-identical repeats (TG210), per role.
        self.exact_repeats: dict[str, set[int]] = {}
        self.seconds = 0.0  # time spent hashing, the exact pass's share of the dataset read

    def observe(self, role: str, line: int, index: int, record: dict[str, Any]) -> None:
        start = time.perf_counter()
        split = self.split(role)
        split.seen += 1
        norm = normalise_record(record)
        if norm is None:
            split.skipped += 1
        else:
            split.add(line, index, norm)
        self.seconds += time.perf_counter() - start

    def exact_repeat(self, role: str, line: int) -> None:
        self.exact_repeats.setdefault(role, set()).add(line)

    def finish(self, role: str) -> None:
        self.split(role)  # a file without records is still a split that was read
        self.finished.add(role)

    def split(self, role: str) -> SplitHashes:
        found = self.splits.get(role)
        if found is None:
            found = self.splits[role] = SplitHashes()
        return found


class Match(NamedTuple):
    """A record (`at`) that matches `count` records of another split, the first being `other`."""

    at: int
    other: int
    count: int


def _positions(column: bytearray) -> dict[bytes, list[int]]:
    found: dict[bytes, list[int]] = {}
    for position, key in enumerate(hashes(column)):
        if key != NO_HASH:
            found.setdefault(key, []).append(position)
    return found


def _collect(found: dict[int, list[int]], at: int, other: int) -> None:
    entry = found.get(at)
    if entry is None:
        found[at] = [other, 1]
    else:
        entry[1] += 1


def cross_duplicates(train: SplitHashes, validation: SplitHashes) -> list[Match]:
    """Validation records whose normalised text is also in train, in validation order."""
    wanted = _positions(validation.full)  # the smaller split is the one held in a dict
    found: dict[int, list[int]] = {}
    for t, key in enumerate(hashes(train.full)):
        for v in wanted.get(key, ()):
            _collect(found, v, t)
    return [Match(v, first, n) for v, (first, n) in sorted(found.items())]


def prompt_leaks(train: SplitHashes, validation: SplitHashes) -> list[Match]:
    """Validation records whose prompt is in train with a different answer, in validation order."""
    wanted = _positions(validation.prompt)
    found: dict[int, list[int]] = {}
    for t, key in enumerate(hashes(train.prompt)):
        targets = wanted.get(key)
        if not targets:
            continue
        answer = hash_at(train.answer, t)
        for v in targets:
            if answer != hash_at(validation.answer, v):
                _collect(found, v, t)
    return [Match(v, first, n) for v, (first, n) in sorted(found.items())]


class Repeat(NamedTuple):
    """A record of one split repeated later in the same split."""

    first: int
    later: list[int]  # the first few later positions
    count: int  # all later copies


def repeats(split: SplitHashes, keep: int = 5, reported: set[int] | frozenset[int] = frozenset()) -> list[Repeat]:
    """Groups of identical normalised records inside one split, in order of first appearance.

    Copies on a line in `reported` (already reported as byte-identical repeats) are left out, and
    a group with no other copy with them.
    """
    first: dict[bytes, int] = {}
    groups: dict[int, list[Any]] = {}
    for position, key in enumerate(hashes(split.full)):
        origin = first.setdefault(key, position)
        if origin == position or split.lines[position] in reported:
            continue
        group = groups.setdefault(origin, [0, []])
        group[0] += 1
        if len(group[1]) < keep:
            group[1].append(position)
    return [Repeat(origin, later, n) for origin, (n, later) in sorted(groups.items())]
