"""The marks tunegate's charts are made of, written as SVG text: no plotting library.

    canvas = Canvas(800, 300)
    plot = canvas.plot(x=(0, 12), y=(6.5, 7.0))     # a plot area in the canvas's free space
    plot.axes(x_label="step", y_label="training loss", x_ticks=ticks(0, 12, integer=True))
    plot.line([(1, 6.9), (2, 6.8)], colour=CYCLE[0], marker=3)
    canvas.title("mini-run on cpu")
    data = canvas.svg()                               # UTF-8 bytes of a complete SVG document

Issue 33: drawing a sweep's or a preflight's charts with matplotlib cost ~0.45 CPU s of imports
and 0.07-0.13 s a chart, in every flow command; these charts are points, lines, bars and text,
which SVG states directly and a browser (MLflow's artifact view, Prefect's, the HTML report)
draws sharp at any size. Text is measured nowhere: the layout reserves room from the number of
characters (CHAR_EM), and the viewer sets the glyphs. Every text is escaped and characters XML
cannot hold are replaced, so a label from a spec (a run name, a model id) is only ever text, never
markup; attributes hold only numbers this module formats and the charts' own colours.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from xml.sax.saxutils import escape

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
FONT_PX = 11
CHAR_EM = 0.6  # an average glyph's width in ems: what the layout reserves per character
# matplotlib's default colour cycle ("tab10"), so a curve keeps the colour it had in the PNG charts
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
         "#17becf")
GRID, AXIS, INK = "#d9d9d9", "#333333", "#000000"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


Box = tuple[float, float, float, float]  # left, top, right, bottom, in pixels


def text_width(text: str, size: float = FONT_PX) -> float:
    """Pixels the layout reserves for `text` at `size`."""
    return len(text) * size * CHAR_EM


def _clean(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", str(text)))


def _n(value: float) -> str:
    """A coordinate: two decimals are below a pixel's hundredth, and keep the file small."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def ticks(low: float, high: float, most: int = 6, integer: bool = False) -> list[float]:
    """Round values from `low` to `high` (both within), about `most` + 1 of them, 1, 2, 2.5 or 5
    times a power of ten apart (whole numbers with `integer`)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        return []
    span = high - low or abs(high) or 1.0
    raw = span / most
    power = 10 ** math.floor(math.log10(raw))
    steps = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * power for m in steps if m * power >= raw * 0.85)  # a tick or two over `most` beats half as many
    if integer:
        step = max(1.0, math.ceil(step))
    first = math.ceil(low / step - 1e-9) * step
    count = int(math.floor((high - first) / step + 1e-9)) + 1
    return [round(first + i * step, 12) for i in range(max(count, 0))]


def tick_label(value: float, values: Sequence[float]) -> str:
    """`value` with as many decimals as the ticks' spacing needs (0.25 -> 2, 0.5 -> 1, 5 -> 0); past
    a million, or with steps below 1e-4, in powers of ten (a diverged loss of 1e30 stays one label)."""
    step = min((b - a for a, b in zip(values, values[1:])), default=abs(value) or 1.0)
    if max(abs(v) for v in (*values, value)) >= 1e6 or 0 < step < 1e-4:
        return f"{value:.4g}"
    decimals = 0
    while decimals < 6 and abs(step * 10 ** decimals - round(step * 10 ** decimals)) > 1e-6:
        decimals += 1
    return f"{value:,.{decimals}f}" if abs(value) >= 10_000 else f"{value:.{decimals}f}"


def left_margin(y_ticks: Sequence[float], y_label: bool = True) -> float:
    """Pixels left of a plot for its y tick labels and, beside them, its rotated y label."""
    widest = max((text_width(tick_label(v, y_ticks)) for v in y_ticks), default=0)
    return widest + (36 if y_label else 16)


def legend_size(labels: Sequence[str], columns: int = 1, size: float = FONT_PX - 1) -> tuple[float, float]:
    """(width, height) in pixels of a legend of `labels` (Canvas.legend)."""
    column = max((text_width(label, size) for label in labels), default=0) + 28
    rows = -(-len(labels) // columns)
    return column * min(columns, len(labels)), rows * (size + 6)


def padded(values: Sequence[float], share: float = 0.05) -> tuple[float, float]:
    """The range of `values` with `share` of it added each side (matplotlib's margins); a single
    value, or values equal to a millionth, get a range around them (ticks a float can tell apart)."""
    low, high = min(values), max(values)
    if high - low <= abs(high) * 1e-6:
        pad = max(abs(high) * 0.05, 0.5)
    else:
        pad = (high - low) * share
    return low - pad, high + pad


class Canvas:
    """An SVG document of `width` x `height` pixels on white, holding plots, a title and legends."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self._marks: list[str] = [f'<rect width="{width}" height="{height}" fill="#ffffff"/>']

    def add(self, mark: str) -> None:
        self._marks.append(mark)

    def text(self, x: float, y: float, text: str, *, size: float = FONT_PX, colour: str = INK,
             anchor: str = "start", baseline: str = "auto", rotate: float = 0, weight: str = "normal") -> None:
        """`text` at pixel (x, y); anchor start/middle/end; baseline auto/middle/hanging."""
        turn = f' transform="rotate({_n(rotate)} {_n(x)} {_n(y)})"' if rotate else ""
        bold = ' font-weight="bold"' if weight != "normal" else ""
        self.add(f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" fill="{colour}" text-anchor="{anchor}" '
                 f'dominant-baseline="{baseline}"{bold}{turn}>{_clean(text)}</text>')

    def title(self, text: str, colour: str = INK, y: float = 18) -> None:
        """A title centred over the canvas, at most as wide as it (a longer one is cut with an ellipsis)."""
        fits = int((self.width - 20) / (FONT_PX + 1) / CHAR_EM)
        shown = text if len(text) <= fits else text[:max(fits - 1, 1)] + "\u2026"
        self.text(self.width / 2, y, shown, size=FONT_PX + 1, colour=colour, anchor="middle")

    def plot(self, x: tuple[float, float], y: tuple[float, float], box: Box | None = None) -> Plot:
        """A plot area mapping data ranges `x` and `y` onto `box` (left, top, right, bottom pixels)."""
        return Plot(self, box or (60, 30, self.width - 15, self.height - 45), x, y)

    def legend(self, entries: Sequence[tuple[str, str]], x: float, y: float, columns: int = 1,
               size: float = FONT_PX - 1) -> None:
        """Swatches with labels, from (x, y) to the right and down, `columns` entries a row."""
        width = legend_size([label for _, label in entries], 1, size)[0]
        for i, (colour, label) in enumerate(entries):
            left, top = x + (i % columns) * width, y + (i // columns) * (size + 6)
            self.add(f'<rect x="{_n(left)}" y="{_n(top)}" width="14" height="{_n(size - 1)}" fill="{colour}"/>')
            self.text(left + 19, top + size - 1, label, size=size)

    def svg(self) -> bytes:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family="{FONT}">')
        return "\n".join([head, *self._marks, "</svg>", ""]).encode("utf-8")


class Plot:
    """A box of the canvas with data coordinates: x grows right, y grows up."""

    def __init__(self, canvas: Canvas, box: Box, x: tuple[float, float], y: tuple[float, float]):
        self.canvas, self.box = canvas, box
        self.x_range = x if x[1] > x[0] else (x[0] - 0.5, x[0] + 0.5)
        self.y_range = y if y[1] > y[0] else (y[0] - 0.5, y[0] + 0.5)

    def px(self, x: float) -> float:
        left, _, right, _ = self.box
        low, high = self.x_range
        return left + (x - low) / (high - low) * (right - left)

    def py(self, y: float) -> float:
        _, top, _, bottom = self.box
        low, high = self.y_range
        return bottom - (y - low) / (high - low) * (bottom - top)

    def inside_x(self, x: float) -> bool:
        return self.x_range[0] <= x <= self.x_range[1]

    def inside_y(self, y: float) -> bool:
        return self.y_range[0] <= y <= self.y_range[1]

    def axes(self, *, x_label: str = "", y_label: str = "", x_ticks: Sequence[float] = (),
             y_ticks: Sequence[float] = (), x_names: Sequence[str] | None = None, rotate_names: float = 0,
             grid_x: bool = False, grid_y: bool = False) -> None:
        """The frame, ticks with their labels (`x_names` instead of numbers at `x_ticks`), grid lines
        and axis labels. Ticks outside the ranges are left out."""
        left, top, right, bottom = self.box
        c = self.canvas
        xs = [v for v in x_ticks if self.inside_x(v)]
        ys = [v for v in y_ticks if self.inside_y(v)]
        for v in ys if grid_y else ():
            c.add(f'<line x1="{_n(left)}" y1="{_n(self.py(v))}" x2="{_n(right)}" y2="{_n(self.py(v))}" '
                  f'stroke="{GRID}" stroke-width="1"/>')
        for v in xs if grid_x else ():
            c.add(f'<line x1="{_n(self.px(v))}" y1="{_n(top)}" x2="{_n(self.px(v))}" y2="{_n(bottom)}" '
                  f'stroke="{GRID}" stroke-width="1"/>')
        c.add(f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" height="{_n(bottom - top)}" '
              f'fill="none" stroke="{AXIS}" stroke-width="1"/>')
        names = list(x_names) if x_names is not None else [tick_label(v, xs) for v in xs]
        for v, name in zip(x_ticks if x_names is not None else xs, names):
            if not self.inside_x(v):
                continue
            x = self.px(v)
            c.add(f'<line x1="{_n(x)}" y1="{_n(bottom)}" x2="{_n(x)}" y2="{_n(bottom + 4)}" stroke="{AXIS}"/>')
            if rotate_names:
                c.text(x, bottom + 12, name, size=FONT_PX - 2, anchor="end", rotate=-rotate_names)
            else:
                c.text(x, bottom + 16, name, anchor="middle")
        for v in ys:
            y = self.py(v)
            c.add(f'<line x1="{_n(left - 4)}" y1="{_n(y)}" x2="{_n(left)}" y2="{_n(y)}" stroke="{AXIS}"/>')
            c.text(left - 7, y, tick_label(v, ys), anchor="end", baseline="middle")
        if x_label:
            c.text((left + right) / 2, c.height - 8, x_label, anchor="middle")
        if y_label:
            widest = max((text_width(tick_label(v, ys)) for v in ys), default=0)
            x = max(left - widest - 18, 12)
            c.text(x, (top + bottom) / 2, y_label, anchor="middle", rotate=-90)

    def line(self, points: Sequence[tuple[float, float]], colour: str, width: float = 1.5, marker: float = 0,
             dash: str = "") -> None:
        """A polyline through `points` (data coordinates), with round markers of radius `marker`."""
        if not points:
            return
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{_n(self.px(x))},{_n(self.py(y))}" for x, y in points)
        self.canvas.add(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{_n(width)}"'
                        f' stroke-linejoin="round"{dashed}/>')
        for x, y in points if marker else ():
            self.dot(x, y, colour, marker)

    def dot(self, x: float, y: float, colour: str, radius: float) -> None:
        self.canvas.add(f'<circle cx="{_n(self.px(x))}" cy="{_n(self.py(y))}" r="{_n(radius)}" fill="{colour}"/>')

    def vline(self, x: float, colour: str, width: float = 1, dash: str = "") -> None:
        """A vertical line across the plot at data x."""
        _, top, _, bottom = self.box
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        self.canvas.add(f'<line x1="{_n(self.px(x))}" y1="{_n(top)}" x2="{_n(self.px(x))}" y2="{_n(bottom)}" '
                        f'stroke="{colour}" stroke-width="{_n(width)}"{dashed}/>')

    def rect(self, x0: float, y0: float, x1: float, y1: float, colour: str, edge: str = "") -> None:
        """A filled rectangle between data corners (x0, y0) and (x1, y1)."""
        left, right = sorted((self.px(x0), self.px(x1)))
        top, bottom = sorted((self.py(y0), self.py(y1)))
        stroke = f' stroke="{edge}" stroke-width="0.5"' if edge else ""
        self.canvas.add(f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" height="{_n(bottom - top)}" '
                        f'fill="{colour}"{stroke}/>')

    def text(self, x: float, y: float, text: str, *, dy: float = 0, **style) -> None:
        """`text` at data (x, y), moved `dy` pixels down (negative: up)."""
        self.canvas.text(self.px(x), self.py(y) + dy, text, **style)
