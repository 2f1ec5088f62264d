"""A thread importing, in this process, the modules a command is sure to import later.

    import_ahead(TRACKING_MODULES + TRAINING_MODULES)   # while this thread waits (Prefect's API)

Importing is all it does: no model, no store, no torch state. A module the other thread reaches
first just waits for this one to finish it (Python's per-module import locks). Issue 15: a flow
command's main thread sleeps seconds in the local API's health check while one core is free.
"""
from __future__ import annotations

import importlib
import threading

from tunegate.processes.held_collections import collections_held
from tunegate.processes.mlflow_import import import_mlflow

# MLflow's client and SQL store: the tracking session opens right after the data gate.
TRACKING_MODULES = ("mlflow", "mlflow.store.db.utils", "mlflow.store.tracking.sqlalchemy_store",
                    "mlflow.tracking")
# The training stack the mini-run imports.
TRAINING_MODULES = ("torch", "peft", "transformers.models.auto.modeling_auto",
                    "transformers.models.auto.tokenization_auto")


def import_ahead(names: tuple[str, ...]) -> threading.Thread:
    """Import `names` in order in a daemon thread; one that is missing is left to whoever needs it."""

    def run() -> None:
        with collections_held():  # what it imports lives as long as the command (held_collections)
            for name in names:
                try:
                    _import(name)
                    if name == "torch":
                        _settle_profiler()
                except Exception:  # noqa: BLE001  (the stage that needs it reports a missing package itself)
                    continue

    thread = threading.Thread(target=run, name="tunegate-import-ahead", daemon=True)
    thread.start()
    return thread


def _import(name: str) -> None:
    """`name` imported as the command would: MLflow without what its tracking does not use."""
    if name == "mlflow":
        import_mlflow()
        return
    importlib.import_module(name)


def _settle_profiler() -> None:
    """Start and stop torch's profiler once in the thread that imported torch.

    libkineto expects its first profiler start on the thread that registered it at `import
    torch`; the mini-run profiles on a candidate's thread, and without this its first profile
    printed "ERROR: External init callback must run in same thread as registerClient" to the
    terminal (the profile itself was whole). The mini-run would start the profiler anyway.
    """
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        pass
