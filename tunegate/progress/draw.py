"""How the board looks: one line per running step, redrawn in place with ANSI cursor moves.

    ⠹ reading train.jsonl  ━━━━━━━━━━──────────────  41%  1.4 MB/3.4 MB  2s
    ⠹ near duplicates      ━━━━━━━━━━━━━━━━━━━━━━━─  96%  101/105 records  querying train  3s

Drawn by hand rather than with rich's live display: a rich frame costs ~9 ms of Python, ten
times a second, which the data stages' loops paid for through the GIL (`tunegate check` on a
20 MB file ran 1.5x slower with it on a loaded machine, benchmarks/cli_experience.py); a frame
here costs ~0.05-0.2 ms.
Lines are cut to the terminal's width, so none wraps and the cursor arithmetic stays exact.
A painter gets the steps to show (`tunegate.progress.board.Step`: label, total, unit, done, note).
"""
from __future__ import annotations

import re
import shutil
from typing import Any, TextIO

_SPIN = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
BAR = 24
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def make_painter(stream: TextIO) -> Any:
    return LinePainter(stream)


def amount(value: float, unit: str) -> str:
    """`12.3 MB` for bytes, `1,204 records` for anything else."""
    if unit == "bytes":
        for scale, name in ((1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "kB")):
            if value >= scale:
                return f"{value / scale:.1f} {name}"
        return f"{value:.0f} B"
    return f"{value:,.0f}{' ' + unit if unit else ''}"


def describe(s: Any, now: float) -> tuple[str, float | None, str]:
    """(label, fraction done or None, the counts, note and elapsed time) of a step."""
    done = s.position()
    fraction = min(1.0, done / s.total) if s.total else None
    if s.total and s.unit == "bytes":
        counts = f"{amount(done, s.unit)}/{amount(s.total, s.unit)}"
    elif s.total:
        counts = f"{done:,.0f}/{amount(s.total, s.unit)}"
    else:
        counts = amount(done, s.unit) if done else ""
    tail = "  ".join(p for p in (counts, s.text, f"{now - s.started:.0f}s") if p)
    return s.label, fraction, tail


def visible(text: str) -> str:
    """The text a person sees (the escape sequences removed): what tests compare."""
    return _ANSI.sub("", text)


class LinePainter:
    """Draws the steps as lines below the cursor and moves back up to redraw them."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.lines = 0  # lines drawn last time, to move back over
        self.frame = 0

    def paint(self, steps: list[Any], now: float) -> None:
        if not steps:
            self.clear()
            return
        self.frame += 1
        width = shutil.get_terminal_size((80, 24)).columns - 1
        label_width = max(len(s.label) for s in steps)
        rows = [self._row(s, now, label_width, width) for s in steps]
        self.stream.write(self._back() + "\n".join(rows) + "\x1b[J")
        self.stream.flush()
        self.lines = len(rows)

    def _row(self, s: Any, now: float, label_width: int, width: int) -> str:
        label, fraction, tail = describe(s, now)
        spin = _SPIN[self.frame % len(_SPIN)]
        if fraction is None:
            bar, pct = " " * BAR, "    "
        else:
            filled = round(fraction * BAR)
            bar, pct = "━" * filled + "─" * (BAR - filled), f"{fraction:4.0%}"
        plain = f"{spin} {label:<{label_width}}  {bar}  {pct}  {tail}"[:width]
        # Colour only what fits: the cut above is on the visible text.
        cut = len(plain)
        head = len(spin) + 1 + label_width
        return (f"\x1b[36m{plain[:1]}\x1b[0m{plain[1:head]}\x1b[2m{plain[head:cut]}\x1b[0m"
                if cut > head else plain)

    def _back(self) -> str:
        """Carriage return, then up to the first line drawn last time."""
        return "\r" + (f"\x1b[{self.lines - 1}A" if self.lines > 1 else "")

    def clear(self) -> None:
        if self.lines:
            self.stream.write(self._back() + "\x1b[J")
            self.stream.flush()
            self.lines = 0
