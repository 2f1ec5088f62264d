"""A report's charts: each drawn once per process for the same numbers (a preflight shows them twice)."""
from __future__ import annotations

import tunegate.charts.memory as memory
from tests.support.paths import ROOT
from tunegate.charts import report_charts
from tunegate.gate import check


def test_the_same_report_s_memory_chart_is_drawn_once_and_shown_twice(monkeypatch):
    report = check(ROOT / "examples" / "quickstart.yaml")
    drawn = []
    real = memory.memory_svg

    def counted(*inputs):
        drawn.append(inputs)
        return real(*inputs)

    monkeypatch.setattr(memory, "memory_svg", counted)
    first, again = report_charts(report), report_charts(report)
    assert len(drawn) == 1
    assert first["memory_breakdown.svg"] == again["memory_breakdown.svg"] == real(*drawn[0])
