"""MinHash rows as plain bytes: what the near-duplicate pass holds and looks up (tunegate.overlap
.near, plain_index, near_whole), from the compiled loops without numpy; tunegate.overlap.minhash
wraps the same rows in numpy, and computes them there where the extension is not built.

    matrix, has = compiled_rows([b"user\\thi there", ...], shingle_size=5, num_perm=128)
    # matrix: texts x num_perm uint32 (native order); has: one byte per text, 1 when it has a word
    rows, kept = rows_with_words(texts, places, shingle_size=5, num_perm=128)
    # the rows of the texts with a word, and those texts' places
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from xxhash import xxh3_64_intdigest

from tunegate.native import compiled

SEED = 1  # fixed: the same data gives the same rows on every run and in every process
DENSIFY_ATTEMPTS = 4  # x num_perm; a bin still empty after that takes the next filled bin to its right


@lru_cache(maxsize=8)
def densify_bytes(num_perm: int) -> bytes:
    """minhash.densify_table's values as the compiled loops take them (only they call this), drawn
    in C as numpy.random draws them, without importing numpy.random (~12 ms). One object per
    num_perm: the loops keep their plan of the table by its identity."""
    return compiled.densify_table(SEED, num_perm, DENSIFY_ATTEMPTS * num_perm)


def compiled_rows(texts: list[bytes], shingle_size: int, num_perm: int) -> tuple[bytes, bytes]:
    """(matrix, has) of minhash.signatures, computed by tunegate/native/minhash.c (which must be built)."""
    return compiled.signatures(texts, shingle_size, num_perm, densify_bytes(num_perm), xxh3_64_intdigest)


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
