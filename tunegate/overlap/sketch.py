"""MinHash rows from the compiled loops, as plain bytes: what the near-duplicate pass holds and looks
up without numpy (tunegate.overlap.plain_rows); tunegate.overlap.minhash wraps the same rows in numpy.

    matrix, has = compiled_rows([b"user\\thi there", ...], shingle_size=5, num_perm=128)
    # matrix: texts x num_perm uint32 (native order); has: one byte per text, 1 when it has a word
"""
from __future__ import annotations

from functools import lru_cache

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
