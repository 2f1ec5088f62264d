"""Run a Prefect flow from the CLI (ephemeral API, no server needed) and read back its data.

Import this module BEFORE anything that imports prefect: Prefect reads its settings from the
environment once, at import, so the defaults below only take effect if they are set first.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

# Ephemeral mode starts a local API for this process; no `prefect server` is needed.
os.environ.setdefault("PREFECT_SERVER_ALLOW_EPHEMERAL_MODE", "true")
# A fresh Prefect home takes ~7 s to migrate on an idle 2-core machine and over 20 s (Prefect's
# default limit) on a loaded one; a slow first start must not read as a tunegate bug.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# No phoning home: these machines (and many clusters) have no route out, and it only adds noise.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def run_flow(flow_fn: Callable[..., Any], **parameters: Any) -> tuple[bool, Any]:
    """Call the flow; return (completed, the data its final state carries)."""
    state = flow_fn(**parameters, return_state=True)
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException):
        from tunegate.errors import TunegateError

        if isinstance(data, TunegateError):
            raise data
        raise RuntimeError(f"flow run {state.name}: {data}") from data
    return state.is_completed(), data
