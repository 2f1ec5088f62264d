"""The near-duplicate index of the smaller split: in the heap, mapped from files, or joined on disk.

    rows = IndexRows(num_perm)
    rows.keep(matrix, places)   # each batch of MinHash rows (bytes of uint32) with its records' places
    index = rows.build(bands)   # the index of every row (None when spilled)

A small index (up to MAP_BYTES of rows) is built in the heap: a PlainIndex looked up by the compiled
loops (tunegate.overlap.plain_index), or, where the extension is not built, an lsh.PlacedIndex in
numpy. A bigger one goes to files in a private folder as its rows come (`in_files`), and
tunegate.overlap.shared_index.write_index writes its sorted band keys and compiled look-up beside
them: the index is then the files' read-only map, which worker processes share and of which a
process holds only the pages it reads. Past `near_spill_rows()` rows even that is too much to look
up: `build` writes each band's keys to a file, and the streamed split is joined with them on disk
(tunegate.overlap.near_join), in fixed memory. numpy is imported only for the files.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.native import compiled
from tunegate.overlap.plain_index import Place, PlainIndex, pack_places
from tunegate.overlap.spill import private_folder, write_rows

NEAR_SPILL_VARIABLE = "TUNEGATE_NEAR_SPILL_ROWS"
NEAR_BUDGET_BYTES = 32 << 20  # MinHash rows an index looks up from its map: 65k rows at 128 permutations
MAP_BYTES = 4 << 20  # MinHash rows an index keeps in the heap: 8k rows at 128 permutations
READ_ROWS = 1 << 13  # rows read back from a rows file at once: 4 MB at 128 permutations


def near_spill_rows(num_perm: int) -> int:
    """Rows an index keeps in memory before it goes to disk (the environment may lower it)."""
    try:
        return max(1, int(os.environ[NEAR_SPILL_VARIABLE]))
    except (KeyError, ValueError):
        return max(1, NEAR_BUDGET_BYTES // (4 * max(num_perm, 1)))


def places_of(places: list[Place]) -> Any:
    """(line, key, exact hash) tuples as an lsh.PLACE array."""
    from tunegate.overlap.lsh import PLACE
    from tunegate.overlap.numeric import np

    return np.array(places, dtype=PLACE) if places else np.empty(0, dtype=PLACE)


def matrix_of(rows: bytes, num_perm: int) -> Any:
    """MinHash rows given as bytes, as a (rows, num_perm) uint32 array (a view, read-only)."""
    from tunegate.overlap.numeric import np

    return np.frombuffer(rows, dtype=np.uint32).reshape(-1, num_perm)


class IndexRows:
    """The MinHash rows and places of the indexed split, batch by batch, until the index is built."""

    def __init__(self, num_perm: int, spills: bool = True) -> None:
        self.num_perm = num_perm
        self.spills = spills  # False in a worker's part: its rows are sent back whole
        self.parts: list[tuple[bytes, list[Place]]] = []
        self.count = 0
        self.folder: Path | None = None

    def keep(self, matrix: bytes, places: list[Place]) -> None:
        self.count += len(places)
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

    def _append(self, matrix: bytes, places: list[Place]) -> None:
        assert self.folder is not None
        write_rows(self.folder / "rows", matrix)
        write_rows(self.folder / "places", pack_places(places))

    @property
    def spilled(self) -> bool:
        """Whether the index is joined on disk rather than looked up."""
        return self.folder is not None and self.count > near_spill_rows(self.num_perm)

    @property
    def in_files(self) -> bool:
        """Whether the index is looked up from its files' map (tunegate.overlap.shared_index.write_index
        makes them into an index) rather than built in the heap."""
        return self.folder is not None and not self.spilled

    def build(self, bands: tuple[int, int]) -> Any:
        """The index of every row kept in the heap (a PlainIndex, or in numpy where the extension
        is not built); None for a spilled index, which is joined on disk instead (tunegate.overlap.near_join)."""
        assert not self.in_files
        if self.folder is not None:
            self._write_bands(bands)
            return None
        matrix, places = self._gathered()
        if compiled is not None:
            return PlainIndex.build(matrix, places, self.num_perm, bands)
        from tunegate.overlap.lsh import BandIndex, PlacedIndex

        return PlacedIndex(BandIndex.build(matrix_of(matrix, self.num_perm), bands), places_of(places))

    def _gathered(self) -> tuple[bytes, list[Place]]:
        """The kept batches as one block of rows and one list of places; the batches let go."""
        held, self.parts = self.parts, []
        matrix = b"".join(m for m, _ in held)
        places = [p for _, batch in held for p in batch]
        return matrix, places

    def _write_bands(self, bands: tuple[int, int]) -> None:
        """Each band's key of every row, a file per band in row order (tunegate.overlap.near_join joins them)."""
        assert self.folder is not None
        for _, keys in file_band_keys(self.folder / "rows", self.num_perm, bands):
            for b in range(bands[0]):
                write_rows(self.folder / f"band-{b}", keys[:, b].tobytes())  # a column: tobytes copies it in order


def file_band_keys(path: Path, num_perm: int, bands: tuple[int, int]) -> Iterator[tuple[int, Any]]:
    """(first row, its (rows, bands) band keys) of a file of MinHash rows, READ_ROWS rows at a time."""
    from tunegate.overlap.lsh import band_keys

    width = 4 * num_perm
    start = 0
    with open(path, "rb") as f:
        while block := f.read(READ_ROWS * width):
            yield start, band_keys(matrix_of(block, num_perm), bands)
            start += len(block) // width
