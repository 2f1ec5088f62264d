"""A batch's MinHash rows as plain bytes, for the near-duplicate pass (tunegate.overlap.near,
near_whole): from the compiled loops (tunegate.overlap.sketch), or computed in numpy
(tunegate.overlap.minhash) where they are not built.

    rows, kept = rows_with_words(texts, places, shingle_size=5, num_perm=128)
    # the rows (texts x num_perm uint32) of the texts with a word, and those texts' places
"""
from __future__ import annotations

from typing import Any

from tunegate.native import compiled
from tunegate.overlap.sketch import compiled_rows, densify_bytes


def rows_with_words(texts: list[bytes], places: list[Any], shingle_size: int, num_perm: int) -> tuple[bytes, list[Any]]:
    """The MinHash rows of the texts with a word, and their places (a text without one has no row)."""
    if compiled is not None:
        matrix, has = compiled_rows(texts, shingle_size, num_perm)
    else:
        from tunegate.overlap.minhash import python_signatures

        rows = python_signatures(texts, shingle_size, num_perm)
        matrix, has = rows.matrix.tobytes(), rows.has.tobytes()
    if all(has):
        return matrix, places
    width = 4 * num_perm
    kept = [i for i, flag in enumerate(has) if flag]
    return b"".join(matrix[i * width:(i + 1) * width] for i in kept), [places[i] for i in kept]


def prepare(num_perm: int) -> None:
    """Make the densify table for `num_perm` now (it is cached): processes forked later share it."""
    if num_perm < 1:
        return
    if compiled is not None:
        densify_bytes(num_perm)
    else:
        from tunegate.overlap.minhash import densify_table

        densify_table(num_perm)
