"""The charts a gate report has the numbers for, by file name."""
from __future__ import annotations

from typing import Any

from tunegate.report import GateReport

MEMORY, TOKENS, MINI_RUN = "memory_breakdown.svg", "token_lengths.svg", "mini_run_loss.svg"


def report_charts(report: GateReport) -> dict[str, bytes]:
    """memory_breakdown.svg (the estimate), token_lengths.svg (the mini-run's token audit) and
    mini_run_loss.svg, each only when the report holds its numbers. Each is drawn once per process
    for the same numbers: a preflight shows them in its Prefect artifact and in its MLflow run."""
    from tunegate.charts.drawn_once import drawn_once
    from tunegate.charts.losses import losses_svg
    from tunegate.charts.memory import memory_svg
    from tunegate.charts.tokens import tokens_svg

    out: dict[str, bytes | None] = {}
    estimate = report.facts.estimate or {}
    if estimate.get("memory"):
        out[MEMORY] = drawn_once(memory_svg, estimate["memory"], _hardware(estimate))
    mini = report.stage("mini-run")
    stats: dict[str, Any] = mini.stats if mini is not None else {}
    audit = (stats.get("token_audit") or {}).get("train")
    if audit:
        out[TOKENS] = drawn_once(tokens_svg, audit, "train split")
    losses = [(i, float(v)) for i, v in enumerate(stats.get("losses") or [], 1) if _number(v)]
    if losses:
        out[MINI_RUN] = drawn_once(losses_svg, {"mini-run": losses}, f"mini-run on {stats.get('device', '?')}")
    return {name: data for name, data in out.items() if data}


def _hardware(estimate: dict[str, Any]) -> str:
    hw, model = estimate.get("hardware") or {}, estimate.get("model") or {}
    return f"{model.get('id', 'model')} on {hw.get('count', '?')} x {hw.get('gpu', '?')}"


def _number(value: Any) -> bool:
    """Losses are numbers, or 'nan'/'inf' strings for a diverged step (JSON has no NaN)."""
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
