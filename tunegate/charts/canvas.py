"""A bare matplotlib Figure on the Agg canvas, saved as PNG bytes.

Never `pyplot`: it keeps global state and picks a GUI backend, and charts are drawn from several
threads at once (sweep candidates log in parallel).
"""
from __future__ import annotations

import importlib.util
import io
from typing import Any

DPI = 100


def charts_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Any) -> bytes:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
