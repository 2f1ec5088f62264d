"""The LSH band layout: how many bands of how many MinHash columns, for a threshold.

    bands = band_layout(threshold=0.8, num_perm=128)      # (14, 9): 14 bands of 9 columns

Two rows are candidates when all the columns of at least one band agree. For rows whose texts have
Jaccard similarity s that happens with probability 1 - (1 - s**r)**b; the layout (b bands of r
columns) minimises the weighted area of false positives below the threshold and false negatives
above it, the rule datasketch's MinHashLSH uses, so the same settings give the same layout.
The usual settings' layouts are written down (KNOWN): working one out takes numpy (~55 ms to
import) and ~5 ms, which a check of a small file would otherwise spend before anything else.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

# Weights of (false positives, false negatives): candidates are checked against the threshold
# anyway, so a missed pair costs more than a spare candidate. At threshold 0.8 and 128 columns
# this gives 14 bands of 9 rows instead of 9 of 13, which raises the chance of catching a pair at
# Jaccard 0.83 from 0.57 to 0.95.
RECALL_WEIGHTS = (0.1, 0.9)
_STEPS = 2048  # Simpson's rule intervals: the integrands are smooth polynomials

# band_layout(threshold, num_perm) at the default weights, as worked out below (the default
# gate.overlap settings are 0.8 and 128); tests/overlap/test_minhash.py works each one out again.
KNOWN = {
    (threshold, num_perm): layout
    for num_perm, layouts in (
        (64, [(21, 3), (15, 3), (16, 4), (13, 4), (12, 5), (10, 6), (9, 7), (7, 9), (5, 12), (3, 19)]),
        (128, [(32, 4), (28, 4), (25, 5), (21, 6), (20, 6), (16, 8), (14, 9), (11, 11), (8, 16), (5, 25)]),
        (256, [(42, 4), (51, 5), (42, 6), (36, 7), (32, 8), (28, 9), (23, 11), (18, 14), (13, 19), (8, 32)]))
    for threshold, layout in zip((0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95), layouts)
}


def band_layout(threshold: float, num_perm: int, weights: tuple[float, float] = RECALL_WEIGHTS) -> tuple[int, int]:
    """(bands, columns per band) for the threshold; at least two bands (one band would need every
    column to agree, which datasketch refuses; there two bands of half the columns are used)."""
    known = KNOWN.get((threshold, num_perm)) if weights == RECALL_WEIGHTS else None
    return known if known is not None else worked_out_layout(threshold, num_perm, weights)


@lru_cache(maxsize=16)
def worked_out_layout(threshold: float, num_perm: int, weights: tuple[float, float] = RECALL_WEIGHTS
                      ) -> tuple[int, int]:
    """`band_layout`, worked out: every (b, r) with b * r <= num_perm, the first smallest error kept."""
    from tunegate.overlap.numeric import np

    low = np.linspace(0.0, threshold, _STEPS + 1)
    high = np.linspace(threshold, 1.0, _STEPS + 1)
    at_low, at_high = _simpson_weights(threshold), _simpson_weights(1.0 - threshold)
    area = float(at_low.sum())
    best, layout = float("inf"), (0, 0)
    # (1 - s**r)**b for b = 1, 2, ... by one multiplication each, and each integral as one dot
    # product: 4 numpy calls a layout instead of ~12 (the calls were most of the 25 ms this took,
    # run once in every check). The few ulps this moves the errors by change no layout
    # (tests/overlap/test_minhash.py compares with the pow and slice-sum definition).
    for r in range(1, num_perm + 1):
        miss_low, miss_high = 1 - low ** r, 1 - high ** r
        power_low, power_high = miss_low.copy(), miss_high.copy()
        for b in range(1, num_perm // r + 1):
            fp = area - float(at_low @ power_low)
            fn = float(at_high @ power_high)
            error = fp * weights[0] + fn * weights[1]
            if error < best or (error == best and (b, r) < layout):  # ties: the smallest (b, r), as b outer
                best, layout = error, (b, r)
            power_low *= miss_low
            power_high *= miss_high
    return layout if layout[0] >= 2 else (2, num_perm // 2)


def _simpson_weights(width: float) -> Any:
    """Simpson's rule over _STEPS intervals spanning `width`, as weights of the samples."""
    from tunegate.overlap.numeric import np

    weights = np.full(_STEPS + 1, 2.0)
    weights[1::2] = 4.0
    weights[0] = weights[-1] = 1.0
    return weights * (width / _STEPS / 3)
