"""A sweep's candidates side by side: validation loss per candidate (rejected ones marked)."""
from __future__ import annotations

import math
from typing import NamedTuple

from tunegate.charts.svg import Canvas, left_margin, text_width, ticks

BEST, OTHER, REJECTED = "#2E7D32", "#4C72B0", "#C62828"
SLOT, WIDEST = 110, 2400  # pixels a candidate gets while they fit; the widest chart
LABEL_PX = 14  # the room a slanted 9 px name needs along the axis


class CandidateBar(NamedTuple):
    label: str
    val_loss: float | None  # None (or not finite) for a candidate that was rejected before scoring
    approved: bool


def val_loss_svg(bars: list[CandidateBar], title: str) -> bytes | None:
    """SVG of one point per candidate (the best green); a rejected or unscored one is a labelled slot.
    Up to ~20 candidates each gets its name and value; a NOMAD sweep of hundreds stays one chart
    WIDEST pixels wide, with every k-th name (and always the best's) and the best's value."""
    if not bars:
        return None
    scored = [b.val_loss for b in bars if _scored(b)]
    low, high = (min(scored), max(scored)) if scored else (0.0, 1.0)
    best = next((i for i, b in enumerate(bars) if _scored(b) and b.val_loss == low), None)
    pad = max((high - low) * 0.25, abs(high) * 0.01, 1e-3)
    y_range = (low - pad, high + pad)
    y_ticks = ticks(*y_range, most=5)
    # the candidates' names, slanted under their points: the longest sets the room below
    below = max(text_width(b.label, 9) for b in bars) * math.sin(math.radians(20)) + 40
    canvas = Canvas(int(min(max(500, SLOT * len(bars) + 200), WIDEST)), int(300 + below))
    plot = canvas.plot((-0.6, len(bars) - 0.4), y_range,
                       (left_margin(y_ticks), 32, canvas.width - 15, canvas.height - below))
    spacing = (plot.box[2] - plot.box[0]) / (len(bars) + 0.2)
    every = max(1, math.ceil(LABEL_PX / spacing))
    named = [i for i in range(len(bars)) if i % every == 0 or i == best]
    plot.axes(y_label="validation loss (same frozen set)", y_ticks=y_ticks, grid_y=True,
              x_ticks=named, x_names=[bars[i].label for i in named], rotate_names=20)
    # Points, not bars from zero: candidates' losses differ in the second decimal, which bars would hide.
    for i, b in enumerate(bars):
        if not _scored(b):
            said = ("rejected" if not b.approved else "no score") if spacing >= 50 else "\u00d7"
            plot.text(i, low - pad * 0.5, said, size=9, colour=REJECTED, anchor="middle", baseline="middle")
            continue
        plot.dot(i, b.val_loss, BEST if i == best else OTHER, 5 if spacing >= 20 else 3)
        if spacing >= 45 or i == best:
            plot.text(i, b.val_loss, f"{b.val_loss:.4f}", dy=-10, size=9, anchor="middle")
    canvas.title(title)
    return canvas.svg()


def _scored(bar: CandidateBar) -> bool:
    return bar.approved and bar.val_loss is not None and math.isfinite(bar.val_loss)
