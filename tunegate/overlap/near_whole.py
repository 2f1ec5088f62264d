"""The near-duplicate pass of two splits that each fit in one batch, on plain bytes: no numpy.

    found, candidates = held_pairs((index_texts, index_places), (query_texts, query_places), settings)

A small check (the quickstart's 85 + 20 records) used to import numpy (~55 ms, a quarter of the
whole command) to sketch one batch of each split. Here the compiled loops do all of it: the MinHash
rows (tunegate/native/minhash.c, through tunegate.overlap.plain_rows), and the index of one batch
that the other is looked up in (tunegate.overlap.plain_index, as a streamed pass's). The rows, the
band keys and the pairs are those of minhash.signatures and lsh.BandIndex.candidates, and a pair's
similarity is the same share of agreeing columns, so the findings are the numpy pass's
(tests/overlap/test_near.py compares the two on real files).
"""
from __future__ import annotations

from typing import Any

from tunegate.overlap.bands import band_layout
from tunegate.overlap.plain_index import Place, PlainIndex
from tunegate.overlap.plain_rows import rows_with_words


def held_pairs(index: tuple[list[bytes], list[Place]], queries: tuple[list[bytes], list[Place]],
               settings: Any) -> tuple[list[tuple[tuple[int, int], tuple[int, int], float]], int]:
    """(query (line, key), index (line, key), similarity) of every pair at or above the threshold,
    and the number of candidates checked; exact copies are left out (the exact pass reports them)."""
    s = settings
    index_rows, index_places = rows_with_words(*index, s.shingle_size, s.num_perm)
    query_rows, query_places = rows_with_words(*queries, s.shingle_size, s.num_perm)
    built = PlainIndex.build(index_rows, index_places, s.num_perm, band_layout(s.threshold, s.num_perm))
    return built.matches(query_rows, query_places, s.threshold)
