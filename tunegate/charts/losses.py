"""Loss per step of several runs on one chart (a sweep's candidates, or one mini-run)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from tunegate.charts.canvas import figure, png


def losses_png(curves: dict[str, Sequence[tuple[int, float]]], title: str) -> bytes | None:
    """PNG of every named (step, loss) curve on one axis; a non-finite loss is marked where it happened."""
    curves = {name: points for name, points in curves.items() if points}
    if not curves:
        return None
    from matplotlib.ticker import MaxNLocator

    fig = figure(8, 3.6)
    ax = fig.subplots()
    for name, points in curves.items():
        finite = [(x, y) for x, y in points if math.isfinite(y)]
        line = ax.plot([x for x, _ in finite], [y for _, y in finite], marker=".", label=name)[0] if finite else None
        colour = line.get_color() if line is not None else "red"
        for x, _ in (p for p in points if not math.isfinite(p[1])):
            ax.axvline(x, color=colour, linestyle=":", alpha=0.8)
            ax.text(x, ax.get_ylim()[1], f" {name}: non-finite", fontsize=7, color=colour, va="top")
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    ax.set_title(title, fontsize=10)
    return png(fig)
