"""The numbers the memory model takes from measurement rather than from first principles.

Each is fitted on the FIT split of benchmarks/data/published_memory.csv (published peak-memory
measurements, every row with its source) and checked on the HOLDOUT split, which is never fitted
on. `python benchmarks/estimate_accuracy.py --fit` recomputes them from the fit split;
tests/estimate/test_calibration.py fails when the constants here drift from what it computes.
"""
from __future__ import annotations

from typing import Any

# PyTorch's caching allocator reserves more than it has allocated (blocks rounded to 512 B,
# 2 MiB segments split and cached): a prior, not fitted, since only one fit row publishes
# reserved memory and one row cannot tell the reserve from the model's own error.
RESERVE = 0.05
# torch.compile (inductor) fuses elementwise chains and recomputes cheap ones in the backward
# pass instead of keeping them: the share of eager activations and loss buffers a compiled run
# keeps. Fitted: median over the 2 compiled fit rows (torchtune, Llama-3.2-3B full and
# Llama-3.1-8B QLoRA), so treat it as a rough figure.
COMPILE_ACTIVATIONS = 0.55
# The band around the point estimate: measured / predicted over the 28 fit rows at the 5th and
# 95th percentiles (at least +-5 %). The upper bound decides "fits".
BAND_LOW, BAND_HIGH = 0.90, 1.07
# An architecture the config-only counter does not know (counted as a Llama-style decoder), or one
# synthesised from model.params alone (tunegate.estimate.sized): its upper bound is widened by this share.
UNKNOWN_ARCHITECTURE_WIDENING = 0.25


def band(peak_gib: float, setup: Any, exact: bool = True) -> tuple[float, float]:
    """(low, high) GiB around a point estimate of the device-level peak."""
    high = BAND_HIGH + (0.0 if exact else UNKNOWN_ARCHITECTURE_WIDENING)
    return peak_gib * BAND_LOW, peak_gib * high
