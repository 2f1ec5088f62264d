"""Stream a full run's metrics to MLflow while it trains, with MLflow's system metrics beside them.

The full-run flow opens its MLflow parent run before launching, and hands the trainer its URI and
run id in the environment (TUNEGATE_LIVE_TRACKING_URI, TUNEGATE_LIVE_RUN_ID). The main process then
logs `live/train_loss`, `live/grad_norm`, `live/learning_rate` and `live/val_loss` at each logged
step, and MLflow's SystemMetricsMonitor samples CPU, memory and GPU every 10 s into the same run,
so a user watches the run in the MLflow UI instead of waiting for its end. A logging failure never
stops training: the metric is dropped and the run goes on (the final record is logged after).
"""
from __future__ import annotations

import logging
import math
import os
import time
from typing import Any

from transformers import TrainerCallback

from tunegate.fullrun.live_run import RUN_ENV, URI_ENV

SYSTEM_SAMPLING_S = 10  # MLflow's default interval; a step of a real run is seconds, a run hours
_NAMES = {"loss": "live/train_loss", "grad_norm": "live/grad_norm", "learning_rate": "live/learning_rate",
          "eval_loss": "live/val_loss"}
log = logging.getLogger(__name__)


class LiveMetrics(TrainerCallback):
    """Log each Trainer log line's numbers to the MLflow run named in the environment (main process)."""

    def __init__(self, uri: str, run_id: str) -> None:
        from mlflow import MlflowClient

        self.client, self.run_id = MlflowClient(uri), run_id
        self.monitor: Any = None
        self.uri = uri

    @classmethod
    def from_env(cls) -> LiveMetrics | None:
        uri, run_id = os.environ.get(URI_ENV), os.environ.get(RUN_ENV)
        return cls(uri, run_id) if uri and run_id else None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if state.is_world_process_zero:
            try:
                from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

                self.monitor = SystemMetricsMonitor(self.run_id, sampling_interval=SYSTEM_SAMPLING_S,
                                                    tracking_uri=self.uri)
                self.monitor.start()
            except Exception as exc:  # noqa: BLE001  (psutil missing, no GPU library: no system metrics)
                log.warning("no MLflow system metrics: %s", exc)
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> Any:
        if not state.is_world_process_zero:
            return control
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(_NAMES[k], float(v), now, state.global_step) for k, v in (logs or {}).items()
                   if k in _NAMES and isinstance(v, (int, float)) and math.isfinite(v)]
        if metrics:
            try:
                self.client.log_batch(self.run_id, metrics=metrics)
            except Exception as exc:  # noqa: BLE001  (the store is down: training goes on)
                log.warning("live metrics at step %s not logged: %s", state.global_step, exc)
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.monitor is not None:
            self.monitor.finish()
        return control
