"""LSH candidates of a spilled near-duplicate index, found by a join on disk instead of look-ups.

    queries = QueryRows(index_rows)             # the streamed split's rows, next to the index's files
    queries.keep(matrix, places)                # each streamed batch
    for q, h, sim in queries.pairs(bands, threshold): ...   # then, once: pairs at or above it

Both splits' band keys go to bucket files by key, band by band; each bucket is joined in memory
(a sorted index side, the query side streamed past it), exact copies dropped there (the exact
pass reports them), and the candidate pairs go to files by query range. Each range is deduplicated
(a pair sharing several bands is one candidate), and its candidates' rows are read back with plain
reads to check the threshold. The pairs are `BandIndex.candidates`' pairs (two rows whose columns
agree in a whole band), so the verdicts are the in-memory index's; memory holds a bucket and a
range, whatever the splits' sizes.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.overlap.lsh import PLACE
from tunegate.overlap.near_index import IndexRows
from tunegate.overlap.numeric import np
from tunegate.overlap.spill import CHUNK_ROWS, write_rows

BUCKET_ROWS = 1 << 17  # band entries a bucket holds on average
RANGE = 1 << 14  # query rows whose candidates are checked together
ENTRY = np.dtype([("key", "<u8"), ("row", "<i8"), ("exact", "V16")])


class QueryRows:
    """The streamed split's MinHash rows and places, on disk beside the spilled index's."""

    def __init__(self, index: IndexRows) -> None:
        assert index.folder is not None
        self.index, self.folder = index, index.folder
        self.count = 0

    def keep(self, matrix: Any, places: Any, bands: tuple[int, int]) -> None:
        from tunegate.overlap.lsh import band_keys

        write_rows(self.folder / "q-rows", np.ascontiguousarray(matrix, dtype=np.uint32).tobytes())
        write_rows(self.folder / "q-places", np.ascontiguousarray(places, dtype=PLACE).tobytes())
        keys = band_keys(matrix, bands)
        for b in range(bands[0]):
            write_rows(self.folder / f"q-band-{b}", np.ascontiguousarray(keys[:, b]).tobytes())
        self.count += len(matrix)

    def pairs(self, bands: tuple[int, int], threshold: float) -> tuple[list[tuple[int, int, float]], int]:
        """(query row, index row, similarity) of each candidate at or above `threshold`, and the
        number of candidates checked (exact copies left out)."""
        n, m = self.index.count, self.count
        buckets = max(1, -(-max(n, m) // BUCKET_ROWS))
        for b in range(bands[0]):
            self._scatter("i", n, b, buckets)
            self._scatter("q", m, b, buckets)
            for bucket in range(buckets):
                self._join(bucket)
        found: list[tuple[int, int, float]] = []
        checked = 0
        for r in range(-(-m // RANGE)):
            checked += self._check(r, threshold, found)
        return found, checked

    def _side(self, side: str) -> tuple[str, Path]:
        """The prefix of a side's band files, and its places file."""
        return ("band" if side == "i" else "q-band"), self.folder / ("places" if side == "i" else "q-places")

    def _scatter(self, side: str, count: int, band: int, buckets: int) -> None:
        """One band's (key, row, exact hash) of every row of a side, into bucket files by key."""
        prefix, places_path = self._side(side)
        keys_path = self.folder / f"{prefix}-{band}"
        for start in range(0, count, CHUNK_ROWS):
            size = min(CHUNK_ROWS, count - start)
            entries = np.empty(size, dtype=ENTRY)
            entries["key"] = _read(keys_path, np.dtype(np.uint64), start, size)
            entries["row"] = np.arange(start, start + size)
            entries["exact"] = _read(places_path, PLACE, start, size)["exact"]
            which = entries["key"] % np.uint64(buckets)
            order = np.argsort(which, kind="stable")
            bounds = np.searchsorted(which[order], np.arange(buckets + 1, dtype=np.uint64))
            for k in np.flatnonzero(np.diff(bounds)).tolist():
                write_rows(self.folder / f"{side}-bucket-{k}", entries[order[bounds[k]:bounds[k + 1]]].tobytes())
        keys_path.unlink(missing_ok=True)

    def _join(self, bucket: int) -> None:
        """The pairs of one bucket that share the band's key, exact copies left out, by query range."""
        index, queries = (_take(self.folder / f"{side}-bucket-{bucket}") for side in ("i", "q"))
        if not len(index) or not len(queries):
            return
        index = index[np.argsort(index["key"], kind="stable")]
        left = np.searchsorted(index["key"], queries["key"], side="left")
        runs = np.searchsorted(index["key"], queries["key"], side="right") - left
        q = np.repeat(np.arange(len(queries)), runs)
        at = np.repeat(left, runs) + np.arange(runs.sum()) - np.repeat(np.cumsum(runs) - runs, runs)
        keep = np.flatnonzero(queries["exact"][q] != index["exact"][at])
        pair = np.empty((len(keep), 2), dtype=np.int64)
        pair[:, 0], pair[:, 1] = queries["row"][q[keep]], index["row"][at[keep]]
        ranges = pair[:, 0] // RANGE
        order = np.argsort(ranges, kind="stable")
        bounds = np.flatnonzero(np.diff(ranges[order], prepend=-1, append=-2))
        for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            write_rows(self.folder / f"pairs-{int(ranges[order[s]])}", pair[order[s:e]].tobytes())

    def _check(self, r: int, threshold: float, found: list[tuple[int, int, float]]) -> int:
        """Deduplicate one query range's pairs and check each against the threshold."""
        from tunegate.overlap.minhash import similarity

        pairs = _take(self.folder / f"pairs-{r}", np.dtype((np.int64, (2,))))
        if not len(pairs):
            return 0
        pairs = np.unique(pairs, axis=0)  # sorted by query row, then index row, as BandIndex.candidates
        num_perm = self.index.num_perm
        row = np.dtype((np.uint32, (num_perm,)))
        start = r * RANGE
        queries = _read(self.folder / "q-rows", row, start, min(RANGE, self.count - start))
        hits = np.stack([_read(self.folder / "rows", row, h, 1)[0] for h in pairs[:, 1].tolist()])
        sims = similarity(queries[pairs[:, 0] - start], hits)
        for (q, h), sim in zip(pairs.tolist(), sims.tolist()):
            if sim >= threshold:
                found.append((q, h, sim))
        return len(pairs)

    def place(self, side: str, row: int) -> tuple[int, int]:
        """(line, key) of a row of the index ("i") or of the queries ("q")."""
        at = _read(self._side(side)[1], PLACE, row, 1)[0]
        return int(at["line"]), int(at["index"])


def _read(path: Path, dtype: Any, start: int, count: int) -> Any:
    with open(path, "rb") as f:
        return np.frombuffer(os.pread(f.fileno(), count * dtype.itemsize, start * dtype.itemsize), dtype=dtype)


def _take(path: Path, dtype: Any = ENTRY) -> Any:
    """A bucket or pair file's rows, the file removed."""
    if not path.exists():
        return np.empty(0, dtype=dtype)
    rows = np.fromfile(path, dtype=dtype)
    path.unlink()
    return rows
