"""The TG210 index on disk: a file's record keys past the in-memory budget, joined after the read.

    spill = RepeatSpill(keys, lines)           # the in-memory map's keys and first lines, handed over
    spill.add(key, line, index, column)        # every later record, in file order
    for index, line, first, column in spill.repeats(): ...   # numpy arrays of the repeats, in file order
    spill.close()

Every record's (key, line, index, column) goes to one file as it is read (32 bytes a record). After the
read it is a hash partition: rows go to `n / BUCKET_KEYS` bucket files by key, next to each
chunk's distinct keys with their first line (a key repeated a million times is one row a chunk
there), so a bucket's first-line table stays small whatever the repeats; the bucket's rows are
streamed past it, and a row whose line is not its key's first is a repeat. Repeats go to files by
record range, each sorted when read back: the repeats in file order, from a few MB.
"""
from __future__ import annotations

import shutil
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.dataset.temp_space import TempSpace

CHUNK_ROWS = 1 << 16  # rows buffered, read or written at once: 2 MB
BUCKET_KEYS = 1 << 18  # records a bucket holds on average: a 4 MB first-line table
RANGE = 1 << 18  # records per file of repeats, sorted in memory when read back
SPACE = TempSpace("the repeated-record index's temporary files", "it takes ~64 bytes a record")


def _types() -> tuple[Any, Any, Any]:
    from tunegate.dataset.numeric import np  # loaded only when a file spills

    return (np.dtype([("key", "<u8"), ("line", "<i8"), ("index", "<i8"), ("column", "<i8")]),
            np.dtype([("key", "<u8"), ("line", "<i8")]),
            np.dtype([("index", "<i8"), ("line", "<i8"), ("first", "<i8"), ("column", "<i8")]))


class RepeatSpill:
    """One file's record keys on disk, with the keys its in-memory map held before (their first lines)."""

    def __init__(self, keys: bytes, lines: bytes) -> None:
        self.folder = SPACE.folder("tunegate-repeats-", self)
        self.row, self.first, self.found = _types()
        SPACE.write(self.folder / "early-keys", keys)  # the map's keys: first copies, before every row here
        SPACE.write(self.folder / "early-lines", lines)
        self.early = len(keys) // 8
        self.count = 0
        self._keys, self._lines, self._indexes, self._columns = array("Q"), array("q"), array("q"), array("q")

    def add(self, key: int, line: int, index: int, column: int = 1) -> None:
        self._keys.append(key)
        self._lines.append(line)
        self._indexes.append(index)
        self._columns.append(column)
        if len(self._keys) >= CHUNK_ROWS:
            self._flush()

    def add_many(self, keys: Any, lines: Any, indexes: Any) -> None:
        """Rows of numpy arrays, in file order (a part of a JSONL file read in a worker: every column 1)."""
        self._flush()
        rows = _np().empty(len(keys), dtype=self.row)
        rows["key"], rows["line"], rows["index"], rows["column"] = keys, lines, indexes, 1
        self._write("rows", rows)

    def _flush(self) -> None:
        np = _np()
        if not self._keys:
            return
        rows = np.empty(len(self._keys), dtype=self.row)
        rows["key"] = np.frombuffer(self._keys, dtype="<u8")
        rows["line"] = np.frombuffer(self._lines, dtype="<i8")
        rows["index"] = np.frombuffer(self._indexes, dtype="<i8")
        rows["column"] = np.frombuffer(self._columns, dtype="<i8")
        self._keys, self._lines, self._indexes, self._columns = array("Q"), array("q"), array("q"), array("q")
        self._write("rows", rows)

    def _write(self, name: str, rows: Any) -> None:
        self.count += len(rows) if name == "rows" else 0
        SPACE.write(self.folder / name, rows.tobytes())

    def repeats(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        """(index, line, first line, column) arrays of every repeat, chunk by chunk, in file order."""
        self._flush()
        buckets = max(1, -(-(self.early + self.count) // BUCKET_KEYS))
        self._partition(buckets)
        last = 0
        for b in range(buckets):
            last = max(last, self._join(b))
        for r in range(last + 1):
            found = self._read(f"found-{r}", self.found)
            found = found[_np().argsort(found["index"], kind="stable")]
            if len(found):
                yield found["index"], found["line"], found["first"], found["column"]

    def _partition(self, buckets: int) -> None:
        """Every row to its key's bucket, and each chunk's distinct keys with their first line beside."""
        np = _np()
        for keys, lines in zip(self._chunks("early-keys", np.dtype("<u8")), self._chunks("early-lines",
                                                                                      np.dtype("<i8"))):
            firsts = np.empty(len(keys), dtype=self.first)
            firsts["key"], firsts["line"] = keys, lines
            self._scatter("first", firsts, keys % np.uint64(buckets))
        for rows in self._chunks("rows", self.row):
            order, starts = _runs(rows["key"])
            firsts = np.empty(len(starts), dtype=self.first)
            firsts["key"], firsts["line"] = rows["key"][order][starts], rows["line"][order][starts]
            self._scatter("first", firsts, firsts["key"] % np.uint64(buckets))
            self._scatter("rows", rows, rows["key"] % np.uint64(buckets))

    def _join(self, bucket: int) -> int:
        """The bucket's repeats into files by record range; the last range number written (0 if none)."""
        np = _np()
        firsts = self._read(f"first-{bucket}", self.first)
        # Written in file order (the map's keys, then chunk after chunk, a key once a chunk): a stable
        # sort by key leads each key with its first copy.
        firsts = firsts[np.argsort(firsts["key"], kind="stable")]
        lead = np.concatenate(([True], firsts["key"][1:] != firsts["key"][:-1])) if len(firsts) else []
        table = firsts[lead]
        last = 0
        for rows in self._chunks(f"rows-{bucket}", self.row):
            at = np.minimum(np.searchsorted(table["key"], rows["key"]), len(table) - 1)
            first = table["line"][at]  # every row's key is in the table: its chunk put it there
            hit = np.flatnonzero(rows["line"] != first)
            found = np.empty(len(hit), dtype=self.found)
            found["index"], found["line"], found["first"] = rows["index"][hit], rows["line"][hit], first[hit]
            found["column"] = rows["column"][hit]
            if len(found):
                self._scatter("found", found, found["index"] // RANGE)
                last = max(last, int(found["index"].max()) // RANGE)
        return last

    def _scatter(self, name: str, rows: Any, which: Any) -> None:
        """Append each row to the file `which` numbers (`name`-number), rows in their order."""
        np = _np()
        order, starts = _runs(which)
        ends = np.append(starts[1:], len(order))
        for s, e in zip(starts.tolist(), ends.tolist()):
            SPACE.write(self.folder / f"{name}-{int(which[order[s]])}", rows[order[s:e]].tobytes())

    def _chunks(self, name: str, dtype: Any) -> Iterator[Any]:
        """A file's rows in chunks, the file removed once read."""
        path = self.folder / name
        if not path.exists():
            return
        with open(path, "rb") as f:
            while block := f.read(CHUNK_ROWS * dtype.itemsize):
                yield _np().frombuffer(block, dtype=dtype)
        path.unlink()

    def _read(self, name: str, dtype: Any) -> Any:
        path: Path = self.folder / name
        if not path.exists():
            return _np().empty(0, dtype=dtype)
        rows = _np().fromfile(path, dtype=dtype)
        path.unlink()
        return rows

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _np() -> Any:
    from tunegate.dataset.numeric import np

    return np


def _runs(keys: Any) -> tuple[Any, Any]:
    """(stable order sorting `keys`, start of each run of equal keys in that order)."""
    np = _np()
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    return order, np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) if len(keys) else order
