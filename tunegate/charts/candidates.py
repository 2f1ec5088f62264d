"""A sweep's candidates side by side: validation loss per candidate (rejected ones marked)."""
from __future__ import annotations

import math
from typing import NamedTuple

from tunegate.charts.canvas import figure, png


class CandidateBar(NamedTuple):
    label: str
    val_loss: float | None  # None (or not finite) for a candidate that was rejected before scoring
    approved: bool


def val_loss_png(bars: list[CandidateBar], title: str) -> bytes | None:
    """PNG of one point per candidate (the best green); a rejected or unscored one is a labelled slot."""
    if not bars:
        return None
    fig = figure(max(5.0, 1.1 * len(bars) + 2), 3.4)
    ax = fig.subplots()
    scored = [b.val_loss for b in bars if b.approved and b.val_loss is not None and math.isfinite(b.val_loss)]
    low, high = (min(scored), max(scored)) if scored else (0.0, 1.0)
    pad = max((high - low) * 0.25, abs(high) * 0.01, 1e-3)
    # Points, not bars from zero: candidates' losses differ in the second decimal, which bars would hide.
    for i, b in enumerate(bars):
        if not b.approved or b.val_loss is None or not math.isfinite(b.val_loss):
            ax.text(i, low - pad * 0.5, "rejected" if not b.approved else "no score", ha="center",
                    va="center", fontsize=8, color="#C62828")
            continue
        colour = "#2E7D32" if b.val_loss == low else "#4C72B0"
        ax.plot([i], [b.val_loss], marker="o", markersize=9, color=colour)
        ax.annotate(f"{b.val_loss:.4f}", (i, b.val_loss), textcoords="offset points", xytext=(0, 8),
                    ha="center", fontsize=8)
    ax.set_xlim(-0.6, len(bars) - 0.4)
    ax.set_ylim(low - pad, high + pad)
    ax.grid(axis="y", alpha=0.3)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([b.label for b in bars], fontsize=7, rotation=20, ha="right")
    ax.set_ylabel("validation loss (same frozen set)")
    ax.set_title(title, fontsize=10)
    return png(fig)
