"""Exact overlap between splits, from hashes taken during the dataset stage's single read.

`OverlapObserver` rides along the dataset stage: for every record it keeps three 16-byte XXH3
hashes of the normalised record (whole record, prompt, answer; see tunegate.overlap.normalize) and the
record's line and index: 64 bytes a record, never its text. The hashes only ever live in this
process's memory, so a fast non-cryptographic hash is enough (XXH3-128 is ~15x faster than BLAKE2b
on these short texts); the fingerprints that are published are BLAKE3 (tunegate.dataset.fingerprint). After the read, the functions below match the hashes:
train/validation duplicates, prompt leakage and duplicates inside train.
"""
from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from xxhash import xxh3_128_digest

from tunegate.native import compiled
from tunegate.overlap.normalize import NormalBytes, normal_parts
from tunegate.overlap.reported import ReportedKeys
from tunegate.overlap.spill import CHUNK_ROWS, RowStore, as_rows, spill_records
from tunegate.processes.freed_memory import give_back_freed

NO_HASH = bytes(16)  # stands for "no prompt" / "no answer"; a 128-bit hash is all zeros with probability 2**-128
_WIDTH = 16
# Where the extension is not built: records up to which a split is joined and its repeats grouped
# in Python rather than in numpy. Importing numpy (~45 ms) costs more than the loops (at 59k
# records the dict's grouping and the joins' scans took ~6 ms more than numpy's); kept lower than
# that break-even (~150k) for memory: the dict holds ~150 bytes a record for a moment, numpy ~40.
# Where it is built, the compiled joins (tunegate/native/hash_joins.c) take any split held in memory.
SMALL_SPLIT = 1 << 16
# A spilled split's repeats are grouped from its whole-record column in memory up to this many records
# (8 MB of hashes for a moment, at the end of the check, when the read's buffers are gone), beyond in
# hash buckets on disk: at 1.1 GB (295k train records) the buckets took ~0.1 s more.
WHOLE_COLUMN_RECORDS = 1 << 19


class SplitHashes:
    """The hashes and places of one split's records, in reading order, in flat arrays: each record's
    line in its own file and its key in the split (`tunegate.dataset.split.record_key`).

    Past `spill_records()` records (tunegate.overlap.spill) the rows go to a file and the arrays hold
    only the latest few: `spilled` is then True, and the joins read the file in chunks.
    """

    def __init__(self, spills: bool = True) -> None:
        self.full = bytearray()
        self.prompt = bytearray()
        self.answer = bytearray()
        self.lines = array("q")
        self.indexes = array("q")
        self.seen = 0  # every record observed
        self.skipped = 0  # records without readable messages (the dataset stage reports them)
        self.store: RowStore | None = None  # the rows before the arrays' once spilled
        # a worker's part is sent back whole (pickled), so it never spills
        self._flush_at = spill_records() + 1 if spills else -1

    def __len__(self) -> int:
        return len(self.lines) + (self.store.count if self.store is not None else 0)

    @property
    def spilled(self) -> bool:
        return self.store is not None

    def add(self, line: int, index: int, norm: NormalBytes) -> bytes:
        """Hash one normalised record and keep its hashes and place; return its whole-record hash."""
        text = norm.text
        return self.add_parts(line, index, text, len(norm.prompt), -1 if norm.answer is None else
                              len(text) - len(norm.answer))

    def add_parts(self, line: int, index: int, text: bytes, prompt_end: int, answer_start: int) -> bytes:
        """`add` of the record in one piece (normalize.normal_parts: its whole text and where its
        prompt and answer lie): the hashes of slices of the text, not of copies (`part_hashes`
        written out: it runs once a record, where a call less is ~10 % of its time)."""
        view = memoryview(text)
        prompt = xxh3_128_digest(view[:prompt_end])
        answer = NO_HASH if answer_start < 0 else xxh3_128_digest(view[answer_start:])
        full = xxh3_128_digest(prompt + answer)
        self.full += full
        # a prompt leaks only with an answer beside it (TG302): an empty or answerless prompt is none
        self.prompt += prompt if prompt_end and answer_start >= 0 else NO_HASH
        self.answer += answer
        self.lines.append(line)
        self.indexes.append(index)
        if len(self.lines) == self._flush_at:
            self.flush()
        return full

    def extend(self, later: SplitHashes, lines: int, records: int) -> None:
        """Append a later part of the same file, whose places count from `lines` and `records` (a key)."""
        self.full += later.full
        self.prompt += later.prompt
        self.answer += later.answer
        if _numpy_anyway(len(self) + len(later)):
            from tunegate.overlap.numeric import np  # the whole column at once: a part holds ~80k records of 100 bytes

            self.lines.frombytes((np.frombuffer(later.lines, dtype=np.int64) + lines).tobytes())
            self.indexes.frombytes((np.frombuffer(later.indexes, dtype=np.int64) + records).tobytes())
        else:  # a small split's few thousand places, without importing numpy (~45 ms)
            self.lines.extend([line + lines for line in later.lines])
            self.indexes.extend([key + records for key in later.indexes])
        self.seen += later.seen
        self.skipped += later.skipped
        if 0 < self._flush_at <= len(self.lines):
            self.flush()

    def flush(self) -> None:
        """Move the rows held in the arrays to the split's file (made on first use)."""
        if self._flush_at < 0:
            return
        first = self.store is None
        if first:
            self.store = RowStore()
            self._flush_at = CHUNK_ROWS  # from now on the arrays hold one chunk at most
        held = len(self.lines)
        columns = [memoryview(c) for c in (self.full, self.prompt, self.answer, self.lines, self.indexes)]
        for start in range(0, held, CHUNK_ROWS):  # a chunk of rows at a time: the whole would be held twice more
            end = min(start + CHUNK_ROWS, held)
            self.store.append(as_rows(*(c[16 * start:16 * end] for c in columns[:3]),
                                      *(c[start:end] for c in columns[3:])))
        columns.clear()
        self.full, self.prompt, self.answer = bytearray(), bytearray(), bytearray()
        self.lines, self.indexes = array("q"), array("q")
        if first:  # the arrays grown to spill_records() rows, freed: their pages go back now, not at exit
            give_back_freed()

    def place(self, position: int) -> tuple[int, int]:
        """(line, key) of the record at `position`."""
        if self.store is None:
            return self.lines[position], self.indexes[position]
        if self.lines:
            self.flush()
        return self.store.place(position)

    def close(self) -> None:
        """Remove the split's file, if it has one (also done when the object is collected)."""
        if self.store is not None:
            self.store.close()


def _numpy_anyway(records: int) -> bool:
    """Whether a split of this many records loads numpy for its joins anyway: once it spills to
    disk, or past SMALL_SPLIT where the compiled joins are not built."""
    return records > spill_records() or (compiled is None and records > SMALL_SPLIT)


def record_hashes(norm: NormalBytes) -> tuple[bytes, bytes, bytes]:
    """(whole record, prompt, answer) hashes; the whole is hashed from the two parts, so each
    character is hashed once. A record without an answer gets NO_HASH as its answer."""
    return part_hashes(norm.prompt, norm.answer)


def part_hashes(prompt_text: Any, answer_text: Any | None) -> tuple[bytes, bytes, bytes]:
    """`record_hashes` of a record's prompt and answer (None: none), as bytes or slices of one text."""
    prompt = xxh3_128_digest(prompt_text)  # 16-byte XXH3 of the UTF-8 text
    answer = NO_HASH if answer_text is None else xxh3_128_digest(answer_text)
    return xxh3_128_digest(prompt + answer), prompt, answer


def hashes(column: bytearray) -> Iterator[bytes]:
    """The 16-byte hashes of a column, one per record."""
    data = bytes(column)
    return (data[i:i + _WIDTH] for i in range(0, len(data), _WIDTH))


def hash_at(column: bytearray, position: int) -> bytes:
    return bytes(column[position * _WIDTH:(position + 1) * _WIDTH])


class OverlapObserver:
    """A dataset-stage observer that hashes every record for the overlap stage.

    Given a `NearPass` (tunegate.overlap.near) it also feeds it each normalised record, so the
    near-duplicate pass needs no second read; that pass indexes one split before it streams the
    other, so the observer asks the dataset stage to read that split first (`read_first`).
    """

    def __init__(self, near: Any = None, spills: bool = True) -> None:
        self.splits: dict[str, SplitHashes] = {}
        self.spills = spills  # False in a worker's part: its hashes are sent back whole
        self.finished: set[str] = set()  # roles whose file was read to the end
        # Keys of the records the dataset stage already reported as byte-identical repeats (TG210), per role.
        self.exact_repeats: dict[str, ReportedKeys] = {}
        self.seconds = 0.0  # time spent hashing, the exact pass's share of the dataset read
        self.near = near

    @property
    def read_first(self) -> str | None:
        return self.near.index_role if self.near is not None else None

    def observe(self, role: str, line: int, index: int, record: dict[str, Any]) -> None:
        start = time.perf_counter()
        split = self.splits.get(role)
        if split is None:
            split = self.split(role)
        split.seen += 1
        parts = normal_parts(record)
        if parts is None:
            split.skipped += 1
            self.seconds += time.perf_counter() - start
            return
        full = split.add_parts(line, index, *parts)
        self.seconds += time.perf_counter() - start
        if self.near is not None:  # its own clock: `near.seconds`
            self.near.add(role, line, index, full, parts[0])

    def exact_repeat(self, role: str, index: int) -> None:
        found = self.exact_repeats.get(role)
        if found is None:
            found = self.exact_repeats[role] = ReportedKeys()
        found.add(index)

    def finish(self, role: str) -> None:
        self.split(role)  # a file without records is still a split that was read
        self.finished.add(role)
        if self.near is not None:
            self.near.finish(role)

    # -- a file read in parts by worker processes (tunegate.dataset.segments) ------------------

    def part(self, role: str) -> OverlapObserver:
        """A fresh observer for one part of `role`'s file (it runs in a worker process)."""
        return OverlapObserver(self.near.part(role) if self.near is not None else None, spills=False)

    def payload(self) -> tuple[dict[str, SplitHashes], float, Any]:
        return self.splits, self.seconds, self.near.payload() if self.near is not None else None

    def join(self, role: str, payload: tuple[dict[str, SplitHashes], float, Any], lines: int, records: int) -> None:
        """Take a part's hashes (and near-duplicate payload), parts in file order."""
        splits, seconds, near = payload
        if role in splits:
            self.split(role).extend(splits[role], lines, records)
        self.seconds += seconds
        if self.near is not None:
            self.near.join(role, near, lines, records)

    def split(self, role: str) -> SplitHashes:
        found = self.splits.get(role)
        if found is None:
            found = self.splits[role] = SplitHashes(self.spills)
        return found


class Match(NamedTuple):
    """A record (`at`) that matches `count` records of another split, the first being `other`."""

    at: int
    other: int
    count: int


def _candidates(column: bytearray, wanted: dict[bytes, list[int]]) -> Iterable[tuple[int, bytes]]:
    """(position, hash) of the column's records that may be among `wanted`: those that are, found
    by the compiled loops; without them, every one in a small split, and in a larger one (numpy is
    loaded for its repeats anyway) those whose hash begins with the 8 bytes some wanted hash begins
    with, found in numpy: the others cannot be wanted. The joins run at the end of the check, in one
    process: at 220 MB the two took 16.9 ms in a loop over every record, 11.8 ms so, ~1 ms compiled."""
    if compiled is not None and wanted:
        found = compiled.present(b"".join(wanted), column)
        return ((t, bytes(column[t * _WIDTH:(t + 1) * _WIDTH])) for t in memoryview(found).cast("q"))
    if len(column) <= SMALL_SPLIT * _WIDTH or not wanted:
        return enumerate(hashes(column))
    from tunegate.overlap.numeric import np

    heads = np.frombuffer(column, dtype="<u8")[::2]
    known = np.sort(np.frombuffer(b"".join(wanted), dtype="<u8")[::2])
    # sort and search, not np.isin: its first call imports numpy.ma (~7 ms)
    at = np.minimum(np.searchsorted(known, heads), len(known) - 1)
    maybe = np.flatnonzero(known[at] == heads).tolist()
    return ((t, bytes(column[t * _WIDTH:(t + 1) * _WIDTH])) for t in maybe)


def _positions(column: bytearray) -> dict[bytes, list[int]]:
    found: dict[bytes, list[int]] = {}
    for position, key in enumerate(hashes(column)):
        if key != NO_HASH:
            found.setdefault(key, []).append(position)
    return found


def _in_memory(*splits: SplitHashes) -> None:
    """The joins here read the columns; a spilled split's are on disk (tunegate.overlap.buckets joins it)."""
    if any(split.spilled for split in splits):
        raise ValueError("a spilled split is joined by tunegate.overlap.buckets")


def _collect(found: dict[int, list[int]], at: int, other: int) -> None:
    entry = found.get(at)
    if entry is None:
        found[at] = [other, 1]
    else:
        entry[1] += 1


def cross_duplicates(train: SplitHashes, validation: SplitHashes) -> list[Match]:
    """Validation records whose normalised text is also in train, in validation order. Validation is
    held in memory; train may have spilled: its file is read a chunk at a time past validation's keys."""
    _in_memory(validation)
    wanted = _positions(validation.full)  # the smaller split is the one held in a dict
    found: dict[int, list[int]] = {}
    for start, full in columns(train, "full"):
        for t, key in _candidates(full, wanted):
            for v in wanted.get(key, ()):
                _collect(found, v, start + t)
    return [Match(v, first, n) for v, (first, n) in sorted(found.items())]


def prompt_leaks(train: SplitHashes, validation: SplitHashes) -> list[Match]:
    """Validation records whose prompt is in train with a different answer, in validation order (train
    read as `cross_duplicates` reads it)."""
    _in_memory(validation)
    wanted = _positions(validation.prompt)
    found: dict[int, list[int]] = {}
    for start, prompt, answers in columns(train, "prompt", "answer"):
        for t, key in _candidates(prompt, wanted):
            targets = wanted.get(key)
            if not targets:
                continue
            answer = hash_at(answers, t)
            for v in targets:
                if answer != hash_at(validation.answer, v):
                    _collect(found, v, start + t)
    return [Match(v, first, n) for v, (first, n) in sorted(found.items())]


def columns(split: SplitHashes, *names: str) -> Iterator[tuple[Any, ...]]:
    """(first position, then each named hash column: "full", "prompt", "answer") of a split: its arrays, or
    once it has spilled its file a chunk at a time (`CHUNK_ROWS` records, 1 MB a column), in reading order."""
    if split.store is None:
        yield (0, *(getattr(split, name) for name in names))
        return
    split.flush()
    for start, rows in split.store.chunks(CHUNK_ROWS):
        yield (start, *(rows[name].tobytes() for name in names))


class Repeat(NamedTuple):
    """A record of one split repeated later in the same split."""

    first: int
    later: list[int]  # the first few later positions
    count: int  # all later copies


def repeats(split: SplitHashes, keep: int = 5, reported: ReportedKeys | None = None) -> list[Repeat]:
    """Groups of identical normalised records inside one split, in order of first appearance.

    Copies whose key is in `reported` (already reported as byte-identical repeats) are left out, and
    a group with no other copy with them. Each copy's first copy is found by the compiled loops (16
    bytes a record for a moment); without them a small split's in a dict, a larger one's sorted in
    numpy: ~40 bytes a record for a moment instead of ~150 (a dict entry and a bytes object each).
    """
    _in_memory(split)
    if compiled is not None or len(split) <= SMALL_SPLIT:
        skip = reported.in_memory() if reported else set()
        if skip is not None:
            return _repeats_of_first_copies(split, keep, skip)
    return _repeats_in_numpy(split, keep, reported)


def _repeats_of_first_copies(split: SplitHashes, keep: int, skip: set[int]) -> list[Repeat]:
    """`repeats` without numpy (~45 ms to import): each later copy's first copy, from the compiled
    loops or a dict; the same groups, in the same order."""
    return _grouped_copies(_first_copies(split.full), split.indexes.__getitem__, keep, skip)


def spilled_repeats_in_memory(split: SplitHashes, reported: ReportedKeys, keep: int = 5) -> list[Repeat] | None:
    """`repeats` of a split that has spilled, from its whole-record column gathered from the file (16
    bytes a record) and the compiled loops; None where that column would pass WHOLE_COLUMN_RECORDS, the
    loops are not built or the reported keys went to disk (the hash buckets join it then)."""
    skip = reported.in_memory()
    if compiled is None or skip is None or len(split) > WHOLE_COLUMN_RECORDS:
        return None
    full = bytearray()
    for _, column in columns(split, "full"):
        full += column
    return _grouped_copies(_first_copies(full), lambda position: split.place(position)[1], keep, skip)


def _grouped_copies(copies: Iterable[tuple[int, int]], key_at: Any, keep: int, skip: set[int]) -> list[Repeat]:
    """The groups of (position, first copy's position) pairs, positions increasing, leaving out copies whose
    record key (`key_at(position)`) is in `skip`."""
    later: dict[int, list[int]] = {}
    for position, origin in copies:
        if key_at(position) not in skip:
            later.setdefault(origin, []).append(position)
    return [Repeat(origin, copies[:keep], len(copies)) for origin, copies in sorted(later.items())]


def _first_copies(column: bytearray) -> Iterable[tuple[int, int]]:
    """(position, position of the first record with its hash) of every record an earlier one repeats."""
    if compiled is not None:
        later, origin = compiled.first_copies(column)
        return zip(memoryview(later).cast("q"), memoryview(origin).cast("q"))
    first: dict[bytes, int] = {}
    return ((position, origin) for position, key in enumerate(hashes(column))
            if (origin := first.setdefault(key, position)) != position)


def _repeats_in_numpy(split: SplitHashes, keep: int, reported: ReportedKeys | None) -> list[Repeat]:
    """`repeats` by sorting the split's hashes in numpy."""
    from tunegate.overlap.numeric import np

    if not len(split):
        return []
    keys = np.frombuffer(bytes(split.full), dtype=np.dtype((np.void, _WIDTH)))
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    origin = first[inverse.reshape(-1)]  # each record's first copy
    later = np.flatnonzero(origin != np.arange(len(keys)))
    if len(later) and reported:
        placed = np.frombuffer(split.indexes, dtype=np.int64)
        later = later[~reported.matcher()(placed[later])]  # positions in file order: keys increasing
    if not len(later):
        return []
    by_origin = later[np.argsort(origin[later], kind="stable")]  # grouped, positions in file order
    starts = np.flatnonzero(np.diff(origin[by_origin], prepend=-1))
    counts = np.diff(np.append(starts, len(by_origin)))
    return [Repeat(int(origin[by_origin[s]]), by_origin[s:s + min(n, keep)].tolist(), int(n))
            for s, n in zip(starts.tolist(), counts.tolist())]
