"""The numbers the memory model takes from measurement rather than from first principles.

Each is fitted on the FIT split of benchmarks/data/published_memory.csv (published peak-memory
measurements, every row with its source) and checked on the HOLDOUT split, which is never fitted
on. `python benchmarks/estimate_accuracy.py --fit` recomputes them from the fit split;
tests/estimate/test_calibration.py fails when the constants here drift from what it computes.
"""
from __future__ import annotations

from typing import Any

# PyTorch's caching allocator reserves more than it has allocated (rounded blocks, split
# segments): max_memory_reserved / max_memory_allocated on the fit rows that publish both.
RESERVE = 0.05
# torch.compile (inductor) fuses elementwise chains and keeps fewer intermediates: the share of
# eager activations and loss buffers a compiled run keeps, fitted on compiled fit rows.
COMPILE_ACTIVATIONS = 1.0
# The band around the point estimate: measured / predicted on the fit rows, at the 5th and 95th
# percentiles. The upper bound decides "fits".
BAND_LOW, BAND_HIGH = 0.90, 1.15
# An architecture the config-only counter does not know (counted as a Llama-style decoder):
# its upper bound is widened by this share.
UNKNOWN_ARCHITECTURE_WIDENING = 0.25


def band(peak_gib: float, setup: Any, exact: bool = True) -> tuple[float, float]:
    """(low, high) GiB around a point estimate of the device-level peak."""
    high = BAND_HIGH + (0.0 if exact else UNKNOWN_ARCHITECTURE_WIDENING)
    return peak_gib * BAND_LOW, peak_gib * high
