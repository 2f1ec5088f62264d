"""The hostile inputs of the output tests, and reports built straight from findings."""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.report import Finding, GateReport, StageResult

HOSTILE = DATA / "output" / "hostile"


def report_of(*findings: Finding, spec: str | None = None) -> GateReport:
    """A failed dataset stage holding `findings` (each counted once), as the gate would report it."""
    return GateReport.from_stages([StageResult(name="dataset", status="failed", findings=list(findings),
                                               totals_by_code={f.code: 1 for f in findings})], spec=spec)
