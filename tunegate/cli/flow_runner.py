"""Run a Prefect flow from the CLI (ephemeral API, no server needed) and read back its data.

Import this module BEFORE anything that imports prefect: Prefect reads its settings from the
environment once, at import, so the defaults below only take effect if they are set first.
"""
from __future__ import annotations

import os
import threading
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


_api_start: threading.Thread | None = None


def start_api_early(training: bool) -> None:
    """Start Prefect's ephemeral API now, in the background, and import the training stack meanwhile.

    The API is a server in a subprocess (~4.5 s to start on an idle 2-core machine) and torch,
    transformers and peft take ~3-6 s to import: started one after the other, a sweep or preflight
    paid both before its first task (issue 15); this way the server starts on the other core while
    this process imports. Nothing happens when a server is configured (PREFECT_API_URL).
    """
    global _api_start
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ALLOW_EPHEMERAL_MODE

    if _api_start is None and not PREFECT_API_URL.value() and PREFECT_SERVER_ALLOW_EPHEMERAL_MODE.value():
        from prefect.server.api.server import SubprocessASGIServer

        _api_start = threading.Thread(target=_start_quietly, args=(SubprocessASGIServer(),), daemon=True,
                                      name="tunegate-prefect-api")
        _api_start.start()
    if training:
        try:
            import peft  # noqa: F401
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError:
            pass  # the stage that needs them says how to install them


def _start_quietly(server: Any) -> None:
    try:
        server.start()
    except Exception:  # noqa: BLE001 - the flow's own client starts it again and reports the failure
        pass


def run_flow(flow_fn: Callable[..., Any], **parameters: Any) -> tuple[bool, Any]:
    """Call the flow; return (completed, the data its final state carries)."""
    global _api_start
    if _api_start is not None:  # the flow's client must find the API up, not half started
        _api_start.join()
        _api_start = None
    state = flow_fn(**parameters, return_state=True)
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException):
        from tunegate.errors import TunegateError

        if isinstance(data, TunegateError):
            raise data
        raise RuntimeError(f"flow run {state.name}: {data}") from data
    return state.is_completed(), data
