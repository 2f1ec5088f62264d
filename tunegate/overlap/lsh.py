"""LSH banding over MinHash rows: which pairs of rows are worth comparing.

    bands = band_layout(threshold=0.8, num_perm=128)      # (14, 9): tunegate.overlap.bands
    index = BandIndex.build(rows_of_smaller_split, bands)
    query_rows, index_rows = index.candidates(rows_of_a_batch)

Two rows are candidates when all the columns of at least one band agree. Where the extension is
built a hash table per band finds a batch's pairs (tunegate/native/lsh.c, ~12x faster than two
binary searches a band in numpy); `BandIndex.search` is the numpy definition.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tunegate.native import compiled
from tunegate.overlap.numeric import np


KEY_ROWS = 1 << 12  # rows widened to 8 bytes a column at once (~4 MB at 128 permutations)
# A record's line, its key in its split and its exact hash: a row of an index's places, in numpy
# (plain_index.PLACE's layout, as a shared index's `places` file holds them).
PLACE = np.dtype([("line", "<i8"), ("index", "<i8"), ("exact", "V16")])


def band_keys(matrix: Any, bands: tuple[int, int]) -> Any:
    """(rows, bands) uint64: one hash per band of each row, equal when the band's columns agree."""
    count, width = bands
    keys = np.zeros((len(matrix), count), dtype=np.uint64)
    for start in range(0, len(matrix), KEY_ROWS):  # widened a slice at a time: the whole would be 2x the rows
        chunk = keys[start:start + KEY_ROWS]
        cols = matrix[start:start + KEY_ROWS, :count * width].astype(np.uint64).reshape(len(chunk), count, width)
        for c in range(width):  # polynomial of the band's columns; 64 bits, so unequal bands collide ~2**-64
            chunk *= np.uint64(0x100000001B3)
            chunk += cols[:, :, c] + np.uint64(1)
    keys ^= keys >> np.uint64(29)
    return keys


@dataclass
class BandIndex:
    """The rows of one split, with each band's keys sorted for lookup."""

    rows: Any  # (n, num_perm) uint32
    bands: tuple[int, int]
    sorted_keys: Any  # (bands, n) uint64, each band sorted
    order: Any  # (bands, n) int64, or uint32 from a shared index's file: the row of each sorted key
    _table: Any = None  # the compiled look-up of the sorted keys (tunegate/native/lsh.c), built at first use

    @classmethod
    def build(cls, rows: Any, bands: tuple[int, int]) -> BandIndex:
        keys = band_keys(rows, bands).T
        order = np.argsort(keys, axis=1, kind="stable")
        return cls.of(rows, bands, np.take_along_axis(keys, order, axis=1), order)

    @classmethod
    def of(cls, rows: Any, bands: tuple[int, int], sorted_keys: Any, order: Any, table: Any = None) -> BandIndex:
        """The index of rows whose band keys are already sorted (e.g. read back from files), with
        their compiled look-up where one was built already (tunegate.overlap.shared_index)."""
        return cls(rows, bands, sorted_keys, order, table)

    @property
    def table(self) -> Any:
        """The compiled look-up, built when first asked for (16-32 bytes a row and band): a gate's
        process that only shares the index with its workers never builds one."""
        if self._table is None and compiled is not None:
            self._table = compiled.BandTable(np.ascontiguousarray(self.sorted_keys), self.bands[0])
        return self._table

    def candidates(self, batch: Any) -> tuple[Any, Any]:
        """(batch row, index row) of every pair sharing a band, each pair once, sorted."""
        if self.table is None or not len(batch) or not len(self.rows):
            return self.search(batch)
        # the same pairs as `search`, a hash look-up per band and row
        order = self.order if self.order.dtype in (np.int64, np.uint32) else self.order.astype(np.int64)
        pairs = np.frombuffer(self.table.pairs(np.ascontiguousarray(batch, dtype=np.uint32), batch.shape[1],
                                               self.bands[1], np.ascontiguousarray(order)), dtype=np.int64)
        return pairs // len(self.rows), pairs % len(self.rows)

    def search(self, batch: Any) -> tuple[Any, Any]:
        """`candidates` by binary search in numpy: the definition, and what runs without the extension."""
        if not len(batch) or not len(self.rows):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        keys = band_keys(batch, self.bands)
        found = []
        last = len(self.rows) - 1
        for b in range(self.bands[0]):
            column = keys[:, b]
            left = np.searchsorted(self.sorted_keys[b], column, side="left")
            # Most rows share no band: one search finds the few that do, the second runs on those only.
            hit = np.flatnonzero(self.sorted_keys[b][np.minimum(left, last)] == column)
            if not len(hit):
                continue
            runs = np.searchsorted(self.sorted_keys[b], column[hit], side="right") - left[hit]
            query = np.repeat(hit, runs)
            offsets = np.arange(runs.sum()) - np.repeat(np.cumsum(runs) - runs, runs)
            found.append(query * len(self.rows) + self.order[b][np.repeat(left[hit], runs) + offsets])
        if not found:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        pairs = np.unique(np.concatenate(found))
        return pairs // len(self.rows), pairs % len(self.rows)


@dataclass
class PlacedIndex:
    """A BandIndex with its rows' places (PLACE): the near-duplicate index in numpy,
    where the extension is not built (tunegate.overlap.plain_index.PlainIndex otherwise, whose
    `matches` this is)."""

    index: BandIndex
    places: Any

    @property
    def bands(self) -> tuple[int, int]:
        return self.index.bands

    @property
    def sorted_keys(self) -> Any:
        return self.index.sorted_keys

    def files(self) -> list[tuple[str, Any]]:
        """(file, its bytes) as a shared index holds them (tunegate.overlap.shared_index)."""
        return [("rows", np.ascontiguousarray(self.index.rows, dtype=np.uint32).tobytes()),
                ("places", np.ascontiguousarray(self.places, dtype=PLACE).tobytes()),
                ("sorted_keys", np.ascontiguousarray(self.index.sorted_keys).tobytes()),
                ("order", np.ascontiguousarray(self.index.order, dtype=np.uint32).tobytes())]

    def matches(self, batch: bytes, places: list[tuple[int, int, bytes]], threshold: float
                ) -> tuple[list[tuple[tuple[int, int], tuple[int, int], float]], int]:
        from tunegate.overlap.minhash import similarity

        matrix = np.frombuffer(batch, dtype=np.uint32).reshape(-1, self.index.rows.shape[1])
        query, hit = self.index.candidates(matrix)
        if not len(query):
            return [], 0
        exact = np.frombuffer(b"".join(p[2] for p in places), dtype="V16")
        keep = np.flatnonzero(exact[query] != self.places["exact"][hit])  # exact copies: the exact pass's
        if not len(keep):
            return [], 0
        query, hit = query[keep], hit[keep]
        sims = similarity(matrix[query], np.asarray(self.index.rows[hit]))
        at = self.places[hit]
        found = [(places[q][:2], (line, key), sim) for q, line, key, sim in
                 zip(query.tolist(), at["line"].tolist(), at["index"].tolist(), sims.tolist()) if sim >= threshold]
        return found, len(keep)
