"""Pictures of what the gate measured, as PNG bytes (matplotlib's Agg canvas, never pyplot).

    pngs = report_charts(report)      # {"memory_breakdown.png": b"...", "token_lengths.png": b"..."}

Each chart is drawn only from numbers a stage computed: the estimate's memory breakdown, the
mini-run token audit's length histogram, the losses a run logged. A chart whose numbers are not
in the report is left out, never drawn from a guess. matplotlib comes with the `orchestrate` and
`report` extras; without it there are no charts and `charts_available()` says so.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"charts_available": "tunegate.charts.canvas", "report_charts": "tunegate.charts.of_report"}

__all__ = ["charts_available", "report_charts"]
__getattr__ = front_door(__name__, _HOME)
