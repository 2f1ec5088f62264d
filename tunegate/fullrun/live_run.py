"""Which MLflow run a launched trainer streams its metrics to: two environment variables.

    env.update(live_env(session.uri, session.parent_run_id))   # the full-run flow, before launching

Read by `tunegate.fullrun.live_metrics.LiveMetrics.from_env` inside the trainer process.
"""
from __future__ import annotations

URI_ENV, RUN_ENV = "TUNEGATE_LIVE_TRACKING_URI", "TUNEGATE_LIVE_RUN_ID"


def live_env(uri: str, run_id: str) -> dict[str, str]:
    """The environment entries that make a launched trainer stream its metrics into run `run_id`."""
    return {URI_ENV: uri, RUN_ENV: run_id}
