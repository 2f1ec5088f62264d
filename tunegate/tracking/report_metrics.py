"""What a gate report measured, as the numbers MLflow records for a candidate.

The stages keep their measurements as JSON stats (NaN written as text); this turns them back into
the record's typed fields so `record_from_report(report, spec, **report_measurements(report))`
logs the mini-run's loss curve, its speed and memory, and the predicted hours.
"""
from __future__ import annotations

from typing import Any

from tunegate.report import GateReport
from tunegate.tracking.record import StepMetrics

GIB = 2**30


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # "nan", "inf": a diverging step is logged as it was
        except ValueError:
            return None
    return None


def report_measurements(report: GateReport) -> dict[str, Any]:
    """The record fields a report can fill: mini_run_steps, mini_run_eval_loss, trained_steps and
    train_seconds (the mini-run's; a later training replaces them), tokens_per_s, peak_memory_gib, predicted_hours,
    advice. Missing stages leave their fields out."""
    out: dict[str, Any] = {}
    mini = report.stage("mini-run")
    if mini is not None and mini.stats:
        losses = mini.stats.get("losses") or []
        norms = mini.stats.get("grad_norms") or []
        out["mini_run_steps"] = [StepMetrics(step=i + 1, loss=_number(loss),
                                             grad_norm=_number(norms[i]) if i < len(norms) else None)
                                 for i, loss in enumerate(losses)]
        out["mini_run_eval_loss"] = _number(mini.stats.get("eval_loss"))
        out["trained_steps"] = mini.stats.get("steps")
        out["train_seconds"] = mini.duration_s  # a preflight's training is its mini-run; a later one replaces it
        measured = report.facts.mini_run
        out["tokens_per_s"] = _number(measured.tokens_per_s) if measured else None
        peak = _number(measured.peak_memory_bytes) if measured else None
        out["peak_memory_gib"] = round(peak / GIB, 4) if peak is not None else None
    estimate = report.facts.estimate or {}
    out["predicted_hours"] = _number(estimate.get("hours"))
    if report.facts.advice is not None:
        out["advice"] = report.facts.advice
    return {k: v for k, v in out.items() if v is not None}
