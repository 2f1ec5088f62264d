"""Pictures of what the gate measured, as SVG documents (tunegate.charts.svg: no plotting library).

    charts = report_charts(report)    # {"memory_breakdown.svg": b"<svg ...", "token_lengths.svg": ...}

Each chart is drawn only from numbers a stage computed: the estimate's memory breakdown, the
mini-run token audit's length histogram, the losses a run logged. A chart whose numbers are not
in the report is left out, never drawn from a guess. Every install draws them: nothing to import
beyond the standard library (matplotlib drew PNGs here until issue 33 measured its cost).
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"report_charts": "tunegate.charts.of_report"}

__all__ = ["report_charts"]
__getattr__ = front_door(__name__, _HOME)
