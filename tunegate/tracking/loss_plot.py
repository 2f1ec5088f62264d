"""The loss-curve chart logged with every candidate: loss and gradient norm per step, side by side."""
from __future__ import annotations

from collections.abc import Sequence

from tunegate.charts.losses import curves_plot
from tunegate.charts.svg import Canvas
from tunegate.tracking.record import StepMetrics


def loss_curve_svg(curves: dict[str, Sequence[StepMetrics]], title: str) -> bytes | None:
    """SVG of loss (left) and grad norm (right) per step for each named curve; None if empty."""
    curves = {name: steps for name, steps in curves.items() if steps}
    if not curves:
        return None
    canvas = Canvas(900, 340)
    half = canvas.width / 2
    for attr, label, box in (("loss", "loss", (0, 32, half - 10, canvas.height - 45)),
                             ("grad_norm", "gradient norm", (half, 32, canvas.width - 15, canvas.height - 45))):
        points = {name: _points(steps, attr) for name, steps in curves.items()}  # a curve keeps its colour
        if any(points.values()):
            curves_plot(canvas, points, box, label)
    canvas.title(title)
    return canvas.svg()


def _points(steps: Sequence[StepMetrics], attr: str) -> list[tuple[int, float]]:
    return [(s.step, getattr(s, attr)) for s in steps if getattr(s, attr) is not None]
