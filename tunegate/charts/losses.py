"""Loss per step of several runs on one chart (a sweep's candidates, or one mini-run)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from tunegate.charts.svg import CYCLE, Box, Canvas, Plot, left_margin, legend_size, padded, ticks

Points = Sequence[tuple[int, float]]


def losses_svg(curves: dict[str, Points], title: str) -> bytes | None:
    """SVG of every named (step, loss) curve on one axis; a non-finite loss is marked where it happened."""
    curves = {name: points for name, points in curves.items() if points}
    if not curves:
        return None
    canvas = Canvas(800, 360)
    curves_plot(canvas, curves, (0, 32, canvas.width - 15, canvas.height - 45), "training loss")
    canvas.title(title)
    return canvas.svg()


def curves_plot(canvas: Canvas, curves: dict[str, Points], box: Box, y_label: str) -> Plot:
    """The curves in `box` (its left edge moved right for the y labels), each in the colour of its
    place in `curves`, a legend in the top right; a non-finite value is a dotted line where it happened."""
    steps = [x for points in curves.values() for x, _ in points]
    finite = [y for points in curves.values() for _, y in points if math.isfinite(y)]
    x_range, y_range = padded(steps), padded(finite) if finite else (0.0, 1.0)
    y_ticks = ticks(*y_range, most=5)
    left, top, right, bottom = box
    plot = canvas.plot(x_range, y_range, (left + left_margin(y_ticks), top, right, bottom))
    plot.axes(x_label="step", y_label=y_label, x_ticks=ticks(*x_range, integer=True), y_ticks=y_ticks,
              grid_x=True, grid_y=True)
    shown = []
    for i, (name, points) in enumerate(curves.items()):
        line = [(x, y) for x, y in points if math.isfinite(y)]
        colour = CYCLE[i % len(CYCLE)] if line else "#d62728"
        plot.line(line, colour, marker=2.5)
        if line:
            shown.append((colour, name))
        for x, _ in (p for p in points if not math.isfinite(p[1])):  # the failure worth seeing
            plot.vline(x, colour, dash="2,3")
            plot.text(x, y_range[1], f" {name}: non-finite", dy=11, size=9, colour=colour)
    if shown:
        width, _ = legend_size([name for _, name in shown])
        canvas.legend(shown, max(plot.box[0] + 8, right - width - 8), top + 8)
    return plot
