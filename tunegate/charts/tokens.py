"""Token lengths of the audited records as a histogram, against max_seq_len, with the truncated share."""
from __future__ import annotations

from typing import Any

from tunegate.charts.svg import Canvas, left_margin, ticks

FITS, TRUNCATED = "#4C72B0", "#C44E52"


def tokens_svg(audit: dict[str, Any], title: str) -> bytes | None:
    """SVG of a token audit's `length_histogram` (edges, counts), `max_seq_len` and `over_max_seq_len`."""
    hist = audit.get("length_histogram") or {}
    edges, counts = hist.get("edges") or [], hist.get("counts") or []
    audited, limit = audit.get("audited") or 0, audit.get("max_seq_len")
    if not counts or len(edges) != len(counts) + 1 or not audited or not limit:
        return None
    over = audit.get("over_max_seq_len", 0)
    low, high = min(edges[0], limit), max(edges[-1], limit)
    pad = (high - low) * 0.05 or 1
    x_range, y_range = (low - pad, high + pad), (0.0, max(max(counts), 1) * 1.05)
    y_ticks = ticks(*y_range, most=5, integer=True)
    canvas = Canvas(800, 300)
    plot = canvas.plot(x_range, y_range, (left_margin(y_ticks), 32, canvas.width - 15, canvas.height - 45))
    plot.axes(x_label="tokens per record (chat template applied)", y_label="records", x_ticks=ticks(*x_range),
              y_ticks=y_ticks)
    for a, b, n in zip(edges, edges[1:], counts):
        if n:
            plot.rect(a, 0, b, n, TRUNCATED if a >= limit else FITS, edge="#ffffff")
    plot.vline(limit, "black", width=2)
    plot.text(limit, y_range[1] * 0.92, f"max_seq_len {limit:,} ", size=9, anchor="end")
    canvas.title(f"{title}: {over:,} of {audited:,} records ({over / audited:.1%}) longer than max_seq_len, truncated")
    return canvas.svg()
