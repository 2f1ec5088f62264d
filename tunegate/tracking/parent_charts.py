"""A sweep's candidates at a glance on its parent run: no expanding the parent to compare them.

MLflow's experiment page charts the runs its table shows, and a sweep's candidates are nested
under their parent, so a comparison needs every parent expanded. The parent therefore carries:
- `candidates/val_loss`, one point per scored candidate (step = the candidate's order), which
  the default chart view draws as validation loss per candidate;
- `val_loss_per_candidate.svg` and `loss_curves.svg` (every candidate's training loss on one
  chart), which the sweep's Prefect artifact embeds too.
Logging is idempotent like the rest of the run tree: a rerun adds no second point per step.
"""
from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunegate.tracking.runs import VERDICT, children

if TYPE_CHECKING:
    from mlflow import MlflowClient

VAL_LOSS_METRIC = "candidates/val_loss"
VAL_LOSS_CHART, CURVES_CHART = "val_loss_per_candidate.svg", "loss_curves.svg"


def chart_candidates(client: MlflowClient, parent_run_id: str, title: str) -> dict[str, bytes]:
    """Log the per-candidate metric and charts on the parent; return the charts by file name."""
    runs = children(client, parent_run_id)
    _log_val_loss_points(client, parent_run_id, runs)
    charts = _charts(client, runs, title)
    if charts:
        with tempfile.TemporaryDirectory(prefix="tunegate-charts-") as tmp:
            for name, data in charts.items():
                (Path(tmp) / name).write_bytes(data)
            client.log_artifacts(parent_run_id, tmp)
    return charts


def candidate_label(run: Any, index: int) -> str:
    return run.info.run_name or f"candidate {index}"


def _val_loss(run: Any) -> float | None:
    value = run.data.metrics.get("val/loss")
    return value if value is not None and math.isfinite(value) else None


def _log_val_loss_points(client: MlflowClient, parent_run_id: str, runs: list[Any]) -> None:
    from mlflow.entities import Metric

    done = {m.step for m in client.get_metric_history(parent_run_id, VAL_LOSS_METRIC)}
    now = int(time.time() * 1000)
    points = [Metric(VAL_LOSS_METRIC, loss, now, i) for i, run in enumerate(runs, 1)
              if (loss := _val_loss(run)) is not None and i not in done]
    if points:
        client.log_batch(parent_run_id, metrics=points)


def _charts(client: MlflowClient, runs: list[Any], title: str) -> dict[str, bytes]:
    if not runs:
        return {}
    from tunegate.charts.candidates import CandidateBar, val_loss_svg
    from tunegate.charts.losses import losses_svg

    bars, curves = [], {}
    for i, run in enumerate(runs, 1):
        label = candidate_label(run, i)
        bars.append(CandidateBar(label, _val_loss(run), run.data.tags.get(VERDICT) == "approved"))
        history = client.get_metric_history(run.info.run_id, "train/loss") or \
            client.get_metric_history(run.info.run_id, "mini_run/loss")
        curves[label] = sorted((m.step, m.value) for m in history)
    out = {VAL_LOSS_CHART: val_loss_svg(bars, f"{title}: validation loss per candidate (same frozen set)"),
           CURVES_CHART: losses_svg(curves, f"{title}: training loss of every candidate")}
    return {name: data for name, data in out.items() if data}
