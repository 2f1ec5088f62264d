"""The near-duplicate index of the smaller split: in the heap, mapped from files, or joined on disk.

    rows = IndexRows(num_perm)
    rows.keep(matrix, places)          # each batch of MinHash rows with its records' places (PLACE)
    index, places = rows.build(bands)  # the BandIndex and the places, row for row (None when spilled)

A small index (up to MAP_BYTES of rows) is built in the heap. A bigger one goes to files in a
private folder as its rows come (`in_files`), and tunegate.overlap.shared_index.write_index writes
its sorted band keys and compiled look-up beside them: the index is then the files' read-only map,
which worker processes share and of which a process holds only the pages it reads. Past
`near_spill_rows()` rows even that is too much to look up: `build` writes each band's keys to a
file, and the streamed split is joined with them on disk (tunegate.overlap.near_join), in fixed memory.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.overlap.numeric import np
from tunegate.overlap.spill import private_folder, write_rows

NEAR_SPILL_VARIABLE = "TUNEGATE_NEAR_SPILL_ROWS"
NEAR_BUDGET_BYTES = 32 << 20  # MinHash rows an index looks up from its map: 65k rows at 128 permutations
MAP_BYTES = 4 << 20  # MinHash rows an index keeps in the heap: 8k rows at 128 permutations
READ_ROWS = 1 << 13  # rows read back from a rows file at once: 4 MB at 128 permutations
PLACE = np.dtype([("line", "<i8"), ("index", "<i8"), ("exact", "V16")])  # a record's line, key, exact hash


def near_spill_rows(num_perm: int) -> int:
    """Rows an index keeps in memory before it goes to disk (the environment may lower it)."""
    try:
        return max(1, int(os.environ[NEAR_SPILL_VARIABLE]))
    except (KeyError, ValueError):
        return max(1, NEAR_BUDGET_BYTES // (4 * max(num_perm, 1)))


def places_of(places: list[tuple[int, int, bytes]]) -> Any:
    """(line, key, exact hash) tuples as a PLACE array."""
    return np.array(places, dtype=PLACE) if places else np.empty(0, dtype=PLACE)


class IndexRows:
    """The MinHash rows and places of the indexed split, batch by batch, until the index is built."""

    def __init__(self, num_perm: int, spills: bool = True) -> None:
        self.num_perm = num_perm
        self.spills = spills  # False in a worker's part: its rows are sent back whole
        self.parts: list[tuple[Any, Any]] = []
        self.count = 0
        self.folder: Path | None = None

    def keep(self, matrix: Any, places: Any) -> None:
        self.count += len(matrix)
        in_heap = self.count * 4 * self.num_perm <= MAP_BYTES and self.count <= near_spill_rows(self.num_perm)
        if self.folder is None and (not self.spills or in_heap):
            self.parts.append((matrix, places))
            return
        if self.folder is None:
            self.folder = private_folder("tunegate-near-index-", self)
            held, self.parts = self.parts, []
            for m, p in held:
                self._append(m, p)
        self._append(matrix, places)

    def _append(self, matrix: Any, places: Any) -> None:
        assert self.folder is not None
        write_rows(self.folder / "rows", np.ascontiguousarray(matrix, dtype=np.uint32).tobytes())
        write_rows(self.folder / "places", np.ascontiguousarray(places, dtype=PLACE).tobytes())

    @property
    def spilled(self) -> bool:
        """Whether the index is joined on disk rather than looked up."""
        return self.folder is not None and self.count > near_spill_rows(self.num_perm)

    @property
    def in_files(self) -> bool:
        """Whether the index is looked up from its files' map (tunegate.overlap.shared_index.write_index
        makes them into an index) rather than built in the heap."""
        return self.folder is not None and not self.spilled

    def build(self, bands: tuple[int, int]) -> tuple[Any, Any]:
        """The BandIndex of every row kept in the heap, and the rows' places; (None, None) for a
        spilled index, which is joined on disk instead (tunegate.overlap.near_join)."""
        from tunegate.overlap.lsh import BandIndex

        assert not self.in_files
        if self.folder is None:
            matrix, places = self._gathered()
            return BandIndex.build(matrix, bands), places
        self._write_bands(bands)
        return None, None

    def _gathered(self) -> tuple[Any, Any]:
        """The kept batches as one matrix and one places array, each batch let go once copied: a
        concatenation would hold every batch and the whole twice at once."""
        matrix = np.empty((self.count, self.num_perm), dtype=np.uint32)
        places = np.empty(self.count, dtype=PLACE)
        at = 0
        self.parts.reverse()
        while self.parts:
            m, p = self.parts.pop()
            matrix[at:at + len(m)], places[at:at + len(m)] = m, p
            at += len(m)
        return matrix, places

    def _write_bands(self, bands: tuple[int, int]) -> None:
        """Each band's key of every row, a file per band in row order (tunegate.overlap.near_join joins them)."""
        assert self.folder is not None
        for _, keys in file_band_keys(self.folder / "rows", self.num_perm, bands):
            for b in range(bands[0]):
                write_rows(self.folder / f"band-{b}", np.ascontiguousarray(keys[:, b]).tobytes())


def file_band_keys(path: Path, num_perm: int, bands: tuple[int, int]) -> Iterator[tuple[int, Any]]:
    """(first row, its (rows, bands) band keys) of a file of MinHash rows, READ_ROWS rows at a time."""
    from tunegate.overlap.lsh import band_keys

    width = 4 * num_perm
    start = 0
    with open(path, "rb") as f:
        while block := f.read(READ_ROWS * width):
            yield start, band_keys(np.frombuffer(block, dtype=np.uint32).reshape(-1, num_perm), bands)
            start += len(block) // width
