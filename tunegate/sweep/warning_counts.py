"""A candidate's warnings, counted per code, truncation first: what travels beside its verdict.

    warning_counts(report)    # {"TG512": 22, "TG511": 22, "TG210": 1}

An approved candidate may still train on records cut at max_seq_len (TG511) or replies that lose
their end (TG512): the example sweep said "approved" while 22 of its 85 final replies were cut. So
the sweep's table, its Markdown and each candidate's MLflow run show these counts with the verdict,
truncation first (it changes what is trained), then the other warnings by code.
"""
from __future__ import annotations

from tunegate.report import GateReport
from tunegate.training.token_audit import TRUNCATION_CODES


def warning_counts(report: GateReport | None) -> dict[str, int]:
    """Every warning of the report counted (past the per-code cap too), truncation first, then by code."""
    if report is None:
        return {}
    counts: dict[str, int] = {}
    for stage in report.stages:
        severity = {f.code: f.severity for f in stage.findings}
        for code, n in stage.totals_by_code.items():
            if severity.get(code) == "warning":
                counts[code] = counts.get(code, 0) + n
    return dict(sorted(counts.items(), key=_order))


def _order(item: tuple[str, int]) -> tuple[int, str]:
    code = item[0]
    return (TRUNCATION_CODES.index(code), code) if code in TRUNCATION_CODES else (len(TRUNCATION_CODES), code)
