"""The bucketed joins' key order: the order numpy sorts the keys in, which their look-ups rely on."""
from __future__ import annotations

import numpy as np

from tunegate.overlap.buckets import _key_order, _within_groups


def keys(*hexes: str) -> np.ndarray:
    return np.frombuffer(b"".join(bytes.fromhex(h) for h in hexes), dtype=f"V{len(hexes[0]) // 2}").copy()


def test_hash_keys_are_ordered_as_numpy_orders_them_copies_in_their_first_order():
    rng = np.random.default_rng(7)
    table = np.frombuffer(rng.bytes(16 * 5000), dtype="V16").copy()
    table[::9] = table[4]  # copies of one key: the order keeps them as they came
    assert (_key_order(table) == np.argsort(table, kind="stable")).all()


def test_keys_sharing_their_first_eight_bytes_are_ordered_by_all_of_them():
    same = "00112233445566778899aabbccddeeff"
    table = keys("ffffffffffffffff0000000000000001", same, "ffffffffffffffff0000000000000000",
                 same, "0011223344556677ff00000000000000")
    assert (_key_order(table) == np.argsort(table, kind="stable")).all()


def test_pairs_of_keys_are_ordered_by_their_first_key_then_their_second():
    rng = np.random.default_rng(3)
    pairs = np.frombuffer(rng.bytes(32 * 2000), dtype="V32").copy()
    raw = np.ascontiguousarray(pairs).view(np.uint8).reshape(-1, 32)
    raw[::3, :16] = raw[0, :16]  # one prompt with many answers
    pairs = raw.copy().view("V32").ravel()
    assert (_key_order(pairs) == np.argsort(pairs, kind="stable")).all()


def test_bucket_numbers_are_ordered_stably():
    rng = np.random.default_rng(5)
    numbers = rng.integers(0, 9, 20_000).astype(np.uint64)
    assert (_key_order(numbers) == np.argsort(numbers, kind="stable")).all()


def test_rows_are_ordered_by_group_then_first_position():
    rng = np.random.default_rng(11)
    group = np.sort(rng.integers(0, 500, 5000))
    first = rng.choice(10**9, 5000, replace=False).astype(np.int64)  # distinct, as record positions are
    assert (_within_groups(group, first) == np.lexsort((first, group))).all()
