"""A split's overlap hashes on disk, once it outgrows a fixed number of records.

    store = RowStore()                      # a private temporary folder, removed by `close` (or at exit)
    store.append(rows)                      # numpy rows of row_type(): three 16-byte hashes, line, key
    for start, chunk in store.chunks(): ...
    line, key = store.place(position)

Below `spill_records()` records a split keeps its hashes in memory (tunegate.overlap.exact); above it
every record's 64 bytes go to a file here, and the joins (tunegate.overlap.buckets) read them back in
fixed-size chunks, so a check of 18 M records holds a few tens of MB instead of 64 bytes a record.
The files are read with plain reads, never memory-mapped: their pages then never count as the
process's resident memory.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from tunegate.dataset.temp_space import TempSpace

SPILL_VARIABLE = "TUNEGATE_OVERLAP_SPILL_RECORDS"
CHUNK_ROWS = 1 << 16  # rows read or written at once: 4 MB
# Records a split keeps in memory: two chunks, 8 MB of arrays (~10 MB as they grow). The in-memory
# joins hold ~250 bytes a validation record (a dict of lists) for a moment, ~33 MB at this count;
# beyond it the hashes go to disk. At 200,000 (until 2026-12-06) a 1.1 GB check's gate held 12.8 MB
# of arrays until the spill and the heap kept their pages to the end: 168-173 MB summed over the
# tree against 151-155 at this count with the freed arrays handed back (docs/benchmarks.md, session
# 43). One chunk would save ~4 MB more but put files of 65,536-131,072 records on the spilled joins
# (~0.04 s more than the in-memory ones at 118,000 records).
SPILL_RECORDS = 2 * CHUNK_ROWS
_BLOCK_ROWS = 1 << 10  # rows `place` reads around the one asked for: places are asked for in order


@cache
def row_type() -> Any:
    """The numpy type of one row: three 16-byte hashes (whole record, prompt, answer), line, key."""
    from tunegate.overlap.numeric import np  # numpy loads only when a split spills

    return np.dtype([("full", "V16"), ("prompt", "V16"), ("answer", "V16"), ("line", "<i8"), ("index", "<i8")])


def spill_records() -> int:
    """Records a split keeps in memory before its hashes go to disk (the environment may lower it)."""
    try:
        return max(1, int(os.environ.get(SPILL_VARIABLE, SPILL_RECORDS)))
    except ValueError:
        return SPILL_RECORDS


_SPACE = TempSpace("the overlap checks' temporary files",
                   "they take ~64 bytes a record, ~1 KB a record of the near-duplicate index")
private_folder = _SPACE.folder  # (prefix, owner): a private folder removed with its owner or at exit
write_rows = _SPACE.write  # (path, data): bytes appended; a full disk is an OutputError naming TMPDIR
spill_failed = _SPACE.failed  # (folder, OSError): that OutputError


class RowStore:
    """Rows of `row_type()` appended to one file, read back in chunks or one place at a time."""

    def __init__(self) -> None:
        self.folder = private_folder("tunegate-overlap-", self)
        self.path = self.folder / "rows.bin"
        self._file = open(self.path, "w+b")  # noqa: SIM115 (closed by close())
        self.count = 0
        self._block: tuple[int, Any] = (-1, None)

    def append(self, rows: Any) -> None:
        try:
            self._file.seek(0, os.SEEK_END)
            self._file.write(rows.data)
        except OSError as exc:
            raise spill_failed(self.folder, exc) from exc
        self.count += len(rows)
        self._block = (-1, None)

    def chunks(self, size: int = CHUNK_ROWS) -> Iterator[tuple[int, Any]]:
        """(first position, rows) of every chunk, in file order."""
        self._file.flush()
        for start in range(0, self.count, size):
            yield start, self.read(start, min(size, self.count - start))

    def read(self, start: int, count: int) -> Any:
        from tunegate.overlap.numeric import np

        row = row_type()
        return np.frombuffer(os.pread(self._file.fileno(), count * row.itemsize, start * row.itemsize), dtype=row)

    def place(self, position: int) -> tuple[int, int]:
        """(line, key) of the record at `position`."""
        first, block = self._block
        if not first <= position < first + _BLOCK_ROWS or block is None or position - first >= len(block):
            self._file.flush()
            first = position - position % _BLOCK_ROWS
            block = self.read(first, min(_BLOCK_ROWS, self.count - first))
            self._block = (first, block)
        row = block[position - first]
        return int(row["line"]), int(row["index"])

    def close(self) -> None:
        self._file.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def as_rows(full: Any, prompt: Any, answer: Any, lines: Any, indexes: Any) -> Any:
    """The in-memory columns of a split (tunegate.overlap.exact.SplitHashes), or slices of them, as
    rows of `row_type()`."""
    from tunegate.overlap.numeric import np

    rows = np.empty(len(lines), dtype=row_type())
    for name, column in (("full", full), ("prompt", prompt), ("answer", answer)):
        rows[name] = np.frombuffer(column, dtype="V16")
    rows["line"] = np.frombuffer(lines, dtype=np.int64)
    rows["index"] = np.frombuffer(indexes, dtype=np.int64)
    return rows
