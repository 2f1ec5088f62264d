"""The loss-curve PNG logged with every candidate: loss and gradient norm per step.

Drawn on a bare `matplotlib.figure.Figure` with the Agg canvas, never through `pyplot`: pyplot
keeps global state and picks a GUI backend, and candidates log from several threads at once.
"""
from __future__ import annotations

import io
import math
from collections.abc import Sequence

from tunegate.tracking.record import StepMetrics


def loss_curve_png(curves: dict[str, Sequence[StepMetrics]], title: str) -> bytes | None:
    """PNG bytes of loss (left) and grad norm (right) per step for each named curve; None if empty."""
    curves = {name: steps for name, steps in curves.items() if steps}
    if not curves:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(9, 3.4), dpi=100)
    FigureCanvasAgg(fig)
    loss_ax, grad_ax = fig.subplots(1, 2)
    for name, steps in curves.items():
        _plot(loss_ax, steps, "loss", name)
        _plot(grad_ax, steps, "grad_norm", name)
    for ax, label in ((loss_ax, "loss"), (grad_ax, "gradient norm")):
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _plot(ax, steps: Sequence[StepMetrics], attr: str, name: str) -> None:
    points = [(s.step, getattr(s, attr)) for s in steps if getattr(s, attr) is not None]
    finite = [(x, y) for x, y in points if math.isfinite(y)]
    if finite:
        ax.plot([x for x, _ in finite], [y for _, y in finite], marker=".", label=name)
    # A non-finite value is the failure worth seeing: mark where it happened.
    for x, _ in (p for p in points if not math.isfinite(p[1])):
        ax.axvline(x, color="red", linestyle=":", alpha=0.8)
