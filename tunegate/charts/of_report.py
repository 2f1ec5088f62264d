"""The charts a gate report has the numbers for, by file name."""
from __future__ import annotations

from typing import Any

from tunegate.charts.canvas import charts_available
from tunegate.report import GateReport

MEMORY, TOKENS, MINI_RUN = "memory_breakdown.png", "token_lengths.png", "mini_run_loss.png"


def report_charts(report: GateReport) -> dict[str, bytes]:
    """memory_breakdown.png (the estimate), token_lengths.png (the mini-run's token audit) and
    mini_run_loss.png, each only when the report holds its numbers; {} without matplotlib. Each is
    drawn once per process for the same numbers: a preflight shows them in its Prefect artifact and
    in its MLflow run."""
    if not charts_available():
        return {}
    from tunegate.charts.drawn_once import drawn_once
    from tunegate.charts.losses import losses_png
    from tunegate.charts.memory import memory_png
    from tunegate.charts.tokens import tokens_png

    out: dict[str, bytes | None] = {}
    estimate = report.facts.estimate or {}
    if estimate.get("memory"):
        out[MEMORY] = drawn_once(memory_png, estimate["memory"], _hardware(estimate))
    mini = report.stage("mini-run")
    stats: dict[str, Any] = mini.stats if mini is not None else {}
    audit = (stats.get("token_audit") or {}).get("train")
    if audit:
        out[TOKENS] = drawn_once(tokens_png, audit, "train split")
    losses = [(i, float(v)) for i, v in enumerate(stats.get("losses") or [], 1) if _number(v)]
    if losses:
        out[MINI_RUN] = drawn_once(losses_png, {"mini-run": losses}, f"mini-run on {stats.get('device', '?')}")
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
