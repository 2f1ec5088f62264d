"""The near-duplicate index looked up by the compiled loops, on plain bytes: no numpy.

    index = PlainIndex.build(rows, places, num_perm, bands)   # rows: bytes of n x num_perm uint32
    found, candidates = index.matches(batch_rows, batch_places, threshold)
    # found: (batch record's (line, key), index record's (line, key), similarity) at or above it

A check whose smaller split's index is looked up (held in memory, or in files shared with the
workers: up to near_index.near_spill_rows() rows) ran its near-duplicate pass in numpy only to hold
rows, sort band keys and compare the columns of a few candidates: importing numpy cost each check
~45 ms (about a tenth of a 55 MB check's CPU) on the gate's path before its worker forked. Here the rows stay
bytes, tunegate/native/lsh.c sorts the band keys (`band_index`, numpy's stable argsort's order),
finds a batch's candidates (`BandTable.pairs`) and counts their agreeing columns (`agreement`):
the pairs, candidates and similarities of lsh.BandIndex and minhash.similarity
(tests/overlap/test_plain_index.py compares them). A shared index (tunegate.overlap.shared_index)
is the same files either way; mapped as a PlainIndex, its places are read where a candidate needs them.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from tunegate.native import compiled

# A record's line, its key in its split and its exact hash: one row of a shared index's `places`
# file, the layout of lsh.PLACE.
PLACE = struct.Struct("<qq16s")
Place = tuple[int, int, bytes]
# Candidate pairs a look-up returns at most, as a slice's rows times the index's: 12 MB of pairs and
# their agreement. A batch of templated records each sharing a band with most of a 9,000-record
# index returned up to ~18 M pairs at once: 261 MB peak in a process, 118 MB so (a scratch check).
PAIRS_AT_ONCE = 1 << 20


def pack_places(places: Sequence[Place]) -> bytes:
    pack = PLACE.pack
    return b"".join(pack(*p) for p in places)


class MappedPlaces(Sequence):
    """The places of a shared index's `places` file (its map), unpacked one at a time when asked for."""

    def __init__(self, data: Any) -> None:
        self._data = data
        self._count = len(data) // PLACE.size

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(self._count))]
        if not 0 <= at < self._count:
            raise IndexError(at)
        return PLACE.unpack_from(self._data, at * PLACE.size)


class PlainIndex:
    """The rows of one split with each band's keys sorted, as bytes (or a map of a shared index's files)."""

    def __init__(self, rows: Any, places: Sequence[Place], num_perm: int, bands: tuple[int, int],
                 sorted_keys: Any, order: Any, table: Any = None) -> None:
        self.rows, self.places, self.num_perm, self.bands = rows, places, num_perm, bands
        self.sorted_keys, self.order = sorted_keys, order
        self._table = table

    @classmethod
    def build(cls, rows: bytes, places: Sequence[Place], num_perm: int, bands: tuple[int, int]) -> PlainIndex:
        sorted_keys, order = compiled.band_index(rows, num_perm, *bands)
        return cls(rows, places, num_perm, bands, sorted_keys, order)

    def files(self) -> list[tuple[str, Any]]:
        """(file, its bytes) as a shared index holds them (tunegate.overlap.shared_index)."""
        return [("rows", self.rows), ("places", pack_places(self.places)), ("sorted_keys", self.sorted_keys),
                ("order", self.order)]

    @property
    def table(self) -> Any:
        """The compiled look-up, built when first asked for: a gate's process that only shares the
        index with its workers never builds one."""
        if self._table is None:
            self._table = compiled.BandTable(self.sorted_keys, self.bands[0])
        return self._table

    def matches(self, batch: bytes, places: Sequence[Place], threshold: float
                ) -> tuple[list[tuple[tuple[int, int], tuple[int, int], float]], int]:
        """The batch's records (rows `batch`, places `places`) at or above `threshold` with an index
        record, and the candidates checked; exact copies are left out (the exact pass reports them).
        Looked up a slice of rows at a time, so a call's pairs stay under PAIRS_AT_ONCE however many
        index rows each shares a band with."""
        n, num_perm, width = len(self.places), self.num_perm, 4 * self.num_perm
        if not batch or not n:
            return [], 0
        step = max(1, PAIRS_AT_ONCE // n)
        found, candidates = [], 0
        with memoryview(batch) as rows:
            for start in range(0, len(rows) // width, step):
                with rows[start * width:(start + step) * width] as chunk:
                    pairs = self.table.pairs(chunk, num_perm, self.bands[1], self.order)
                    agree = compiled.agreement(pairs, self.rows, chunk, num_perm) if pairs else b""
                candidates += self._keep(pairs, agree, places, start, threshold, found)
        return found, candidates

    def _keep(self, pairs: bytes, agree: bytes, places: Sequence[Place], start: int, threshold: float,
              found: list[tuple[tuple[int, int], tuple[int, int], float]]) -> int:
        """The pairs of one slice (its rows counted from `start`) at or above `threshold` into
        `found`; the candidates among them (exact copies are not)."""
        n, num_perm, mine = len(self.places), self.num_perm, self.places
        candidates = 0
        for pair, same in zip(memoryview(pairs).cast("q"), memoryview(agree).cast("i")):
            q, h = divmod(pair, n)
            here, there = places[start + q], mine[h]
            if here[2] == there[2]:
                continue
            candidates += 1
            similarity = same / num_perm  # minhash.similarity's mean of the agreeing columns: the same division
            if similarity >= threshold:
                found.append((here[:2], there[:2], similarity))
        return candidates
