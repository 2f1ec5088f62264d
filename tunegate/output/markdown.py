"""The Markdown report with its charts inlined, for the Prefect UI's artifacts.

Prefect renders an artifact's Markdown itself; its sanitiser keeps `data:` images, so the SVG
charts travel inside the artifact and need no file server (a local MLflow store's artifacts are not on
any URL the Prefect UI could load).
"""
from __future__ import annotations

import base64

from tunegate.charts import report_charts
from tunegate.render import markdown
from tunegate.report import GateReport


def image(name: str, data: bytes) -> str:
    return f"![{name}](data:image/svg+xml;base64,{base64.b64encode(data).decode()})"


def charts_section(charts: dict[str, bytes]) -> str:
    if not charts:
        return ""
    return "\n## Charts\n\n" + "\n\n".join(image(name, data) for name, data in charts.items()) + "\n"


def markdown_with_charts(report: GateReport) -> str:
    """`tunegate.render.markdown(report)`, then the report's charts (memory, token lengths, mini-run loss)."""
    return markdown(report) + charts_section(report_charts(report))
