"""The exact-overlap joins in fixed memory: hash buckets on disk, one in memory at a time.

    for match in spilled_duplicates(train, validation): ...   # exact.cross_duplicates' Matches, in its order
    for match in spilled_leaks(train, validation): ...        # exact.prompt_leaks'
    for group in spilled_repeats(train, reported): ...        # exact.repeats'

While validation holds its hashes in memory the joins of tunegate.overlap.exact run, and a spilled
split's repeats are grouped from its whole-record column while it is small enough
(tunegate.overlap.joins chooses). Beyond (tunegate.overlap.spill) each join is a hash partition:
every record's key goes to one of `n / BUCKET_KEYS` bucket files by its first bytes, so equal keys
meet in one bucket, which is joined in numpy on its own. Train's side of a bucket is
counted per key as it is written (a key repeated a million times is one row per chunk, not a
million), validation's is streamed in chunks past it. The results go to files by position range,
each sorted in memory when read back: the same findings, in the same order, from ~40 MB.
"""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.overlap.exact import NO_HASH, Match, Repeat, SplitHashes
from tunegate.overlap.numeric import np
from tunegate.overlap.reported import ReportedKeys
from tunegate.overlap.spill import CHUNK_ROWS, as_rows, private_folder, write_rows

BUCKET_KEYS = 1 << 17  # keys a bucket holds on average: ~5 MB of table
RANGE = 1 << 18  # positions per result file, sorted in memory when read back
KEYED = np.dtype([("key", "V16"), ("first", "<i8"), ("count", "<i8")])  # a key, its first position and copies
PAIRED = np.dtype([("pair", "V32"), ("first", "<i8"), ("count", "<i8")])  # (prompt, answer) counted
SEEN = np.dtype([("key", "V16"), ("first", "<i8"), ("n", "<i8"), ("kept", "<i8"), ("small", "<i8", (6,))])
FOUND = np.dtype([("at", "<i8"), ("other", "<i8"), ("count", "<i8")])
GROUP = np.dtype([("first", "<i8"), ("count", "<i8"), ("later", "<i8", (5,))])
_NONE = np.void(NO_HASH)


def spilled_duplicates(train: SplitHashes, val: SplitHashes) -> Iterator[Match]:
    """exact.cross_duplicates' Matches, in its order, of splits of which one at least has spilled."""
    return _spilled(_duplicates, train, val)


def spilled_leaks(train: SplitHashes, val: SplitHashes) -> Iterator[Match]:
    """exact.prompt_leaks' Matches, in its order, of splits of which one at least has spilled."""
    return _spilled(_leaks, train, val)


def spilled_repeats(split: SplitHashes, reported: ReportedKeys) -> Iterator[Repeat]:
    """exact.repeats' groups, in its order, of a split that has spilled."""
    return _spilled(_repeats, split, reported)


def _spilled(join: Any, *args: Any) -> Iterator[Any]:
    """Run a bucketed join in a private folder, removed when the results are read (or given up)."""
    holder = _Holder()
    folder = private_folder("tunegate-join-", holder)
    try:
        yield from join(_Files(folder), *args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Holder:
    """Owns a join's folder, so it is removed at exit even if the join is never finished."""


class _Files:
    """Numbered files of numpy rows in one folder, appended in pieces, read back whole or in chunks."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def add(self, name: str, number: int, rows: Any) -> None:
        write_rows(self.folder / f"{name}-{number}", rows.tobytes())

    def chunks(self, name: str, number: int, dtype: Any, size: int = CHUNK_ROWS) -> Iterator[Any]:
        path = self.folder / f"{name}-{number}"
        if not path.exists():
            return
        with open(path, "rb") as f:
            while block := f.read(size * dtype.itemsize):
                yield np.frombuffer(block, dtype=dtype)
        path.unlink()

    def read(self, name: str, number: int, dtype: Any) -> Any:
        path = self.folder / f"{name}-{number}"
        if not path.exists():
            return np.empty(0, dtype=dtype)
        rows = np.fromfile(path, dtype=dtype)
        path.unlink()
        return rows

    def scatter(self, name: str, keys: Any, rows: Any, buckets: int) -> None:
        """Append each row to the bucket file its key's first eight bytes choose."""
        self.by_number(name, _head(keys) % np.uint64(buckets), rows)

    def by_range(self, name: str, at: Any, rows: Any) -> None:
        """Append rows to the result file of their position's range."""
        self.by_number(name, at // RANGE, rows)

    def by_number(self, name: str, which: Any, rows: Any) -> None:
        """Append each row to the file `which` numbers, rows in their order."""
        if not len(rows):
            return
        order, starts = _grouped(which)
        ends = np.append(starts[1:], len(order))
        for s, e in zip(starts.tolist(), ends.tolist()):
            self.add(name, int(which[order[s]]), rows[order[s:e]])

    def in_order(self, name: str, ranges: int, dtype: Any, key: str) -> Iterator[Any]:
        """Every result row, sorted by `key`, one range file at a time."""
        for r in range(ranges):
            rows = self.read(name, r, dtype)
            yield from rows[np.argsort(rows[key], kind="stable")]


def _head(keys: Any) -> Any:
    """The first eight bytes of each key (uint64), or the keys themselves when they are integers."""
    if keys.dtype.kind == "u":
        return keys
    raw = np.ascontiguousarray(keys).view(np.uint8).reshape(len(keys), -1)
    return np.ascontiguousarray(raw[:, :8]).view("<u8").ravel()


def _rows(split: SplitHashes) -> Iterator[tuple[int, Any]]:
    """(first position, rows) of a split's records in chunks, wherever they are held."""
    if split.store is None:
        yield 0, as_rows(split.full, split.prompt, split.answer, split.lines, split.indexes)
        return
    split.flush()
    yield from split.store.chunks()


def _buckets(*splits: SplitHashes) -> int:
    return max(1, -(-max(len(s) for s in splits) // BUCKET_KEYS))


def _grouped(keys: Any) -> tuple[Any, Any]:
    """(stable order sorting `keys`, start of each run of equal keys in that order)."""
    order = _key_order(keys)
    ordered = keys[order]
    return order, np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) if len(keys) else order


def _key_order(keys: Any) -> Any:
    """np.argsort(keys, kind="stable"), the searchsorted order of the tables here, in less time.
    Small numbers (bucket and range numbers) take numpy's radix sort as 16-bit values. Hash keys:
    numpy compares void keys a byte at a time through a call, so they are sorted by their first
    eight bytes read big-endian (which order as the bytes do) with the unstable sort, copies then
    put back in their first order, and only where two different keys share those bytes (~never for
    hashes) by all of their bytes."""
    if not len(keys):
        return np.argsort(keys, kind="stable")
    if keys.dtype.kind in "ui":
        small = keys.min() >= 0 and keys.max() < 1 << 16
        return np.argsort(keys.astype(np.uint16) if small else keys, kind="stable")
    if keys.dtype.kind != "V" or keys.dtype.itemsize % 8:
        return np.argsort(keys, kind="stable")
    words = np.ascontiguousarray(keys).view(">u8").reshape(len(keys), -1)
    order = np.argsort(words[:, 0])
    lead = words[order, 0]
    tie = np.flatnonzero(lead[1:] == lead[:-1])
    if not len(tie):
        return order
    if (words[order[tie], 1:] != words[order[tie + 1], 1:]).any():
        return np.lexsort(words.T[::-1])  # lexsort's last key is its first
    copies = np.zeros(len(keys), dtype=bool)
    copies[tie] = copies[tie + 1] = True
    tied = np.flatnonzero(copies)  # runs of copies: each put in the order the copies came
    within = order[tied]
    order[tied] = within[np.lexsort((within, lead[tied]))]
    return order


def _counted(keys: Any, first: Any, count: Any, dtype: Any) -> Any:
    """One row per distinct key: its smallest first position and the copies added up, sorted by key."""
    order, starts = _grouped(keys)
    out = np.empty(len(starts), dtype=dtype)
    out[dtype.names[0]] = keys[order][starts]
    out["first"] = np.minimum.reduceat(first[order], starts) if len(starts) else []
    out["count"] = np.add.reduceat(count[order], starts) if len(starts) else []
    return out


def _duplicates(files: _Files, train: SplitHashes, val: SplitHashes) -> Iterator[Match]:
    buckets = _buckets(train, val)
    for start, rows in _rows(train):
        keep = np.flatnonzero(rows["full"] != _NONE)
        keys = rows["full"][keep]
        table = _counted(keys, keep + start, np.ones(len(keep), dtype=np.int64), KEYED)
        files.scatter("train", table["key"], table, buckets)
    _stream_validation(files, val, "full", buckets)
    for b in range(buckets):
        table = _counted(*_columns(files.read("train", b, KEYED), "key"), KEYED)
        for rows in files.chunks("validation", b, KEYED):
            at = np.minimum(np.searchsorted(table["key"], rows["key"]), max(len(table) - 1, 0))
            hit = np.flatnonzero(table["key"][at] == rows["key"]) if len(table) else at[:0]
            found = np.empty(len(hit), dtype=FOUND)
            found["at"], found["other"], found["count"] = rows["first"][hit], table["first"][at[hit]], \
                table["count"][at[hit]]
            files.by_range("found", found["at"], found)
    for row in files.in_order("found", -(-len(val) // RANGE), FOUND, "at"):
        yield Match(int(row["at"]), int(row["other"]), int(row["count"]))


def _columns(rows: Any, key: str) -> tuple[Any, Any, Any]:
    return rows[key], rows["first"], rows["count"]


def _stream_validation(files: _Files, val: SplitHashes, column: str, buckets: int) -> None:
    """Validation's records with a hash in `column`, each (key, position), into the bucket files."""
    for start, rows in _rows(val):
        keep = np.flatnonzero(rows[column] != _NONE)
        out = np.empty(len(keep), dtype=KEYED)
        out["key"], out["first"], out["count"] = rows[column][keep], keep + start, 1
        files.scatter("validation", out["key"], out, buckets)
        if column == "prompt":  # the answer rides along, in a file of its own in the same order
            files.scatter("answer", out["key"], rows["answer"][keep], buckets)


def _pairs(rows: Any) -> Any:
    """(prompt, answer) of each row as one 32-byte key."""
    return _pair(rows["prompt"], rows["answer"])


def _pair(prompts: Any, answers: Any) -> Any:
    pair = np.empty(len(prompts), dtype=[("prompt", "V16"), ("answer", "V16")])
    pair["prompt"], pair["answer"] = prompts, answers
    return pair.view("V32").ravel()


def _halves(pairs: Any) -> tuple[Any, Any]:
    raw = np.ascontiguousarray(pairs).view(np.uint8).reshape(len(pairs), 32)
    return tuple(np.ascontiguousarray(raw[:, part]).view("V16").ravel() for part in (slice(0, 16), slice(16, 32)))


def _leaks(files: _Files, train: SplitHashes, val: SplitHashes) -> Iterator[Match]:
    buckets = _buckets(train, val)
    for start, rows in _rows(train):
        keep = np.flatnonzero(rows["prompt"] != _NONE)
        table = _counted(_pairs(rows[keep]), keep + start, np.ones(len(keep), dtype=np.int64), PAIRED)
        files.scatter("train", table["pair"], table, buckets)
    _stream_validation(files, val, "prompt", buckets)
    for b in range(buckets):
        prompts = _PromptTable(_counted(*_columns(files.read("train", b, PAIRED), "pair"), PAIRED))
        answers = files.chunks("answer", b, np.dtype("V16"))
        for rows in files.chunks("validation", b, KEYED):
            found = prompts.leaks(rows["key"], next(answers), rows["first"])
            files.by_range("found", found["at"], found)
        for _ in answers:  # read to the end, which removes the file
            pass
    for row in files.in_order("found", -(-len(val) // RANGE), FOUND, "at"):
        yield Match(int(row["at"]), int(row["other"]), int(row["count"]))


class _PromptTable:
    """One bucket of train's (prompt, answer) pairs: per prompt its copies, its first answer and the
    first record of another answer."""

    def __init__(self, table: Any) -> None:
        self.pairs, self.counts = table["pair"], table["count"]
        prompts, answers = _halves(self.pairs)
        starts = np.flatnonzero(np.concatenate(([True], prompts[1:] != prompts[:-1]))) if len(prompts) else \
            np.empty(0, dtype=np.int64)
        sizes = np.diff(np.append(starts, len(prompts)))
        group = np.repeat(np.arange(len(sizes)), sizes)
        by_first = _within_groups(group, table["first"])  # each prompt's answers, earliest first
        self.prompts = prompts[starts]
        self.total = np.add.reduceat(self.counts, starts) if len(starts) else self.counts
        self.first = table["first"][by_first[starts]]
        self.answer = answers[by_first[starts]]
        self.second = np.where(sizes > 1, table["first"][by_first[np.minimum(starts + 1,
                                                                              max(len(prompts) - 1, 0))]], -1)

    def leaks(self, prompts: Any, answers: Any, at: Any) -> Any:
        """FOUND rows of the validation records whose prompt has other answers here."""
        if not len(self.prompts):
            return np.empty(0, dtype=FOUND)
        g = np.minimum(np.searchsorted(self.prompts, prompts), len(self.prompts) - 1)
        known = self.prompts[g] == prompts
        pairs = _pair(prompts, answers)
        p = np.minimum(np.searchsorted(self.pairs, pairs), len(self.pairs) - 1)
        same = np.where(self.pairs[p] == pairs, self.counts[p], 0)
        count = np.where(known, self.total[g] - same, 0)
        hit = np.flatnonzero(count > 0)
        found = np.empty(len(hit), dtype=FOUND)
        found["at"], found["count"] = at[hit], count[hit]
        found["other"] = np.where(answers[hit] != self.answer[g[hit]], self.first[g[hit]], self.second[g[hit]])
        return found


def _within_groups(group: Any, first: Any) -> Any:
    """np.lexsort((first, group)) for groups of rows with distinct `first` positions, as one key
    (numpy's unstable sort gives the same order when no two keys are equal: ~3x faster)."""
    if not len(group):
        return np.lexsort((first, group))
    span = int(first.max()) + 1
    if int(first.min()) < 0 or (int(group.max()) + 1) * span >= 1 << 62:
        return np.lexsort((first, group))
    return np.argsort(group.astype(np.int64) * span + first)


def _repeats(files: _Files, split: SplitHashes, reported: Any) -> Iterator[Repeat]:
    buckets = _buckets(split)
    matched = reported.matcher()  # the rows' keys increase, chunk after chunk
    for start, rows in _rows(split):
        seen = _seen(rows["full"], start + np.arange(len(rows)), matched(rows["index"]))
        files.scatter("seen", seen["key"], seen, buckets)
    for b in range(buckets):
        seen = files.read("seen", b, SEEN)
        order, starts = _grouped(seen["key"])
        seen = seen[order]
        total = np.add.reduceat(seen["n"], starts) if len(starts) else seen["n"]
        ends = np.append(starts[1:], len(seen)) if len(starts) else starts
        groups = [_group(seen[s:e]) for s, e in zip(starts[total > 1].tolist(), ends[total > 1].tolist())]
        groups = np.array([g for g in groups if g is not None], dtype=GROUP)
        files.by_range("groups", groups["first"], groups)
    for row in files.in_order("groups", -(-len(split) // RANGE), GROUP, "first"):
        yield Repeat(int(row["first"]), [p for p in row["later"].tolist() if p >= 0], int(row["count"]))


def _seen(keys: Any, positions: Any, reported: Any) -> Any:
    """One chunk's records per distinct key: first position, copies, copies not reported, and the
    first six of those (enough for five after the group's first copy)."""
    order, starts = _grouped(keys)
    out = np.zeros(len(starts), dtype=SEEN)
    if not len(starts):
        return out
    out["key"], out["first"] = keys[order][starts], positions[order][starts]
    out["n"] = np.diff(np.append(starts, len(keys)))
    group = np.repeat(np.arange(len(starts)), out["n"])
    kept = np.flatnonzero(~reported[order])
    kept_group = group[kept]
    rank = np.arange(len(kept)) - np.searchsorted(kept_group, kept_group)
    out["kept"] = np.bincount(kept_group, minlength=len(starts))
    out["small"] = -1
    shown = rank < 6
    out["small"][kept_group[shown], rank[shown]] = positions[order][kept[shown]]
    return out


def _group(rows: Any) -> tuple[int, int, list[int]] | None:
    """A key's rows from every chunk, in file order, as (first, later copies, first five later); None
    when no later copy is left once the reported ones are taken out."""
    origin = int(rows["first"][0])
    later = [p for p in rows["small"].ravel().tolist() if p >= 0 and p != origin][:5]
    count = int(rows["kept"].sum()) - (1 if rows["small"][0][0] == origin else 0)
    if count <= 0:
        return None
    return origin, count, later + [-1] * (5 - len(later))
