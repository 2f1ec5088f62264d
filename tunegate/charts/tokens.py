"""Token lengths of the audited records as a histogram, against max_seq_len, with the truncated share."""
from __future__ import annotations

from typing import Any

from tunegate.charts.canvas import figure, png


def tokens_png(audit: dict[str, Any], title: str) -> bytes | None:
    """PNG of a token audit's `length_histogram` (edges, counts), `max_seq_len` and `over_max_seq_len`."""
    hist = audit.get("length_histogram") or {}
    edges, counts = hist.get("edges") or [], hist.get("counts") or []
    audited, limit = audit.get("audited") or 0, audit.get("max_seq_len")
    if not counts or len(edges) != len(counts) + 1 or not audited or not limit:
        return None
    over = audit.get("over_max_seq_len", 0)
    fig = figure(8, 3)
    ax = fig.subplots()
    widths = [b - a for a, b in zip(edges, edges[1:])]
    colours = ["#C44E52" if a >= limit else "#4C72B0" for a in edges[:-1]]
    ax.bar(edges[:-1], counts, width=widths, align="edge", color=colours, edgecolor="white", linewidth=0.5)
    ax.axvline(limit, color="black", linewidth=2)
    ax.text(limit, ax.get_ylim()[1] * 0.92, f"max_seq_len {limit:,} ", fontsize=8, ha="right")
    ax.set_xlabel("tokens per record (chat template applied)")
    ax.set_ylabel("records")
    ax.set_title(f"{title}: {over:,} of {audited:,} records ({over / audited:.1%}) longer than max_seq_len, "
                 "truncated", fontsize=10)
    return png(fig)
