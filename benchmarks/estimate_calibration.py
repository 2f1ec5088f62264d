"""Fit tunegate/estimate/calibration.py's constants on the FIT rows of published_memory.csv only.

    python benchmarks/estimate_accuracy.py --fit      # prints what this computes

Two constants are fitted, in order, each from the rows that can say something about it:

* COMPILE_ACTIVATIONS: for every compiled row, the share of our eager activations and loss
  buffers that would make the prediction exact, (measured - static) / dynamic; the median is kept.
* BAND_LOW / BAND_HIGH: measured / predicted over every fit row (compile applied), at the 5th
  and 95th percentiles (linear interpolation), widened to at least +-5 %.

RESERVE (reserved over allocated memory) stays a prior: one fit row publishes reserved memory,
which cannot separate the allocator's reserve from the model's own error.
"""
from __future__ import annotations

import statistics
from typing import Any

from estimate_accuracy import arch_of, predicted, setup_of  # type: ignore[import-not-found]

from tunegate.estimate import calibration
from tunegate.estimate.memory import GIB, memory_terms, peak_allocated_bytes

MIN_HALF_WIDTH = 0.05


def _measured_allocated(row: dict[str, str]) -> float:
    measured = float(row["memory_gib"])
    return measured / (1 + calibration.RESERVE) if row["measure"] == "reserved" else measured


def compile_share(row: dict[str, str]) -> float:
    """The share of eager activations + logits that makes this compiled row's prediction exact."""
    setup = setup_of(row).model_copy(update={"compile": False})  # the eager terms
    terms = memory_terms(arch_of(row), setup)
    dynamic = terms["activations"] + terms["logits"]
    static = peak_allocated_bytes(terms, setup) - dynamic
    return (_measured_allocated(row) * GIB - static) / dynamic


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, frac = int(pos), pos - int(pos)
    return ordered[low] if low + 1 >= len(ordered) else ordered[low] * (1 - frac) + ordered[low + 1] * frac


def fit_calibration(rows: list[dict[str, str]]) -> dict[str, Any]:
    """The calibration constants the fit rows give, and how many rows each rests on."""
    measured = [r for r in rows if r["measure"] in ("allocated", "reserved")]
    compiled = [r for r in measured if r["compile"] == "true"]
    share = round(statistics.median(compile_share(r) for r in compiled), 2)
    saved = calibration.COMPILE_ACTIVATIONS
    calibration.COMPILE_ACTIVATIONS = share  # the band is measured with the fitted share in place
    try:
        ratios = [float(r["memory_gib"]) / predicted(r)["point"] for r in measured]
    finally:
        calibration.COMPILE_ACTIVATIONS = saved
    low = round(min(_quantile(ratios, 0.05), 1 - MIN_HALF_WIDTH), 2)
    high = round(max(_quantile(ratios, 0.95), 1 + MIN_HALF_WIDTH), 2)
    return {"COMPILE_ACTIVATIONS": share, "BAND_LOW": low, "BAND_HIGH": high,
            "rows": {"compiled": len(compiled), "band": len(ratios)}}
