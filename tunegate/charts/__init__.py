"""Pictures of what the gate measured, as PNG bytes (matplotlib's Agg canvas, never pyplot).

    pngs = report_charts(report)      # {"memory_breakdown.png": b"...", "token_lengths.png": b"..."}

Each chart is drawn only from numbers a stage computed: the estimate's memory breakdown, the
mini-run token audit's length histogram, the losses a run logged. A chart whose numbers are not
in the report is left out, never drawn from a guess. matplotlib comes with the `orchestrate` and
`report` extras; without it there are no charts and `charts_available()` says so.
"""
from tunegate.charts.canvas import charts_available
from tunegate.charts.of_report import report_charts

__all__ = ["charts_available", "report_charts"]
