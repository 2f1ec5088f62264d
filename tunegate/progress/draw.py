"""How the board looks: rich's live display when rich is installed, one plain line otherwise.

A painter gets the steps to show (`tunegate.progress.board.Step`: label, total, unit, done, note).
"""
from __future__ import annotations

import shutil
from typing import Any, TextIO

_SPIN = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def make_painter(stream: TextIO) -> Any:
    try:
        import rich  # noqa: F401  (the orchestrate extra brings it; the static install may not)
    except ImportError:
        return PlainPainter(stream)
    return RichPainter(stream)


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


class RichPainter:
    """A transient rich Live display: it vanishes when the last step ends, leaving the screen as it was."""

    def __init__(self, stream: TextIO):
        from rich.console import Console

        self.console = Console(file=stream, highlight=False)
        self.live: Any = None
        self.frame = 0

    def paint(self, steps: list[Any], now: float) -> None:
        if not steps:
            self.clear()
            return
        from rich.live import Live

        if self.live is None:
            # stdout is the report: never redirect it into this stream.
            self.live = Live(console=self.console, auto_refresh=False, transient=True,
                             redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        self.frame += 1
        self.live.update(self._table(steps, now), refresh=True)

    def _table(self, steps: list[Any], now: float) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        table = Table.grid(padding=(0, 1))
        table.add_column(width=1, no_wrap=True)
        table.add_column(no_wrap=True, min_width=max(len(s.label) for s in steps))
        table.add_column(width=24)
        table.add_column(no_wrap=True, overflow="ellipsis")
        for s in steps:
            label, fraction, tail = describe(s, now)
            bar = (ProgressBar(total=1.0, completed=fraction, width=24) if fraction is not None
                   else Text(" " * 24))
            spin = Text(_SPIN[self.frame % len(_SPIN)], style="cyan")
            table.add_row(spin, Text(label, style="bold"), bar, Text(tail, style="dim", overflow="ellipsis"))
        return table

    def clear(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


class PlainPainter:
    """One line, redrawn in place with a carriage return (no rich on a static-only install)."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.drawn = False
        self.frame = 0

    def paint(self, steps: list[Any], now: float) -> None:
        if not steps:
            self.clear()
            return
        self.frame += 1
        parts = []
        for s in steps:
            label, fraction, tail = describe(s, now)
            pct = f" {fraction:.0%}" if fraction is not None else ""
            parts.append(f"{label}{pct} {tail}")
        width = shutil.get_terminal_size((80, 24)).columns - 1
        line = f"{_SPIN[self.frame % len(_SPIN)]} " + " | ".join(parts)
        self.stream.write("\r\x1b[2K" + line[:width])
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.drawn = False
