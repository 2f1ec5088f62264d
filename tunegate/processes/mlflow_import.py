"""MLflow imported without the packages it pulls in for features tunegate's tracking never calls.

    from tunegate.processes.mlflow_import import import_mlflow
    import_mlflow()          # before the first `from mlflow import ...` of a command; then as usual

`import mlflow` runs MLflow's package start-up, which imports pandas (to register its pandas
dataset constructor and for model signatures) and scipy (sparse-matrix model signatures): ~0.4 of
the import's ~1.45 CPU s here (docs/benchmarks.md, session 40), in every sweep, preflight and
`tunegate runs`. tunegate logs runs, metrics, parameters, tags, artifacts and dataset inputs
through `MlflowClient`, none of which needs them, and MLflow starts without them as its "skinny"
install does (it wraps those imports in `try`). So for this one import they are refused to the
importing thread alone (another thread importing pandas meanwhile gets it); after it they import as
usual: a module of MLflow's that needs pandas later imports it then. Where one of them is already
imported, or MLflow is, nothing changes. numpy and pyarrow are not refused: without them MLflow's
HDFS artifact store is left unusable for the rest of the process.

In a process of our own the import runs with no cyclic collection and what it made is frozen after
(tunegate.processes.held_collections): `tunegate runs` ran 5 full collections walking MLflow's
modules (0.30-0.38 CPU s) and took 1.74 CPU s; 1.25 s with the import held (benchmarks/runs_cli.py;
docs/benchmarks.md, session 46).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from typing import Any

from tunegate.processes.held_collections import collections_held

# What MLflow's start-up imports for features tunegate's tracking does not use (see above).
NOT_FOR_TRACKING = ("pandas", "scipy")


class _Refused(importlib.abc.MetaPathFinder):
    """Refuses the packages in `names`, to one thread, while it is on sys.meta_path."""

    def __init__(self, names: tuple[str, ...], thread: int):
        self.names = names
        self.thread = thread

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() == self.thread and name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{name} is left out while MLflow starts (tunegate.processes.mlflow_import)",
                                      name=name)
        return None


def import_mlflow() -> None:
    """Import MLflow (once per process) without NOT_FOR_TRACKING; a missing MLflow raises as its import does.

    An MLflow whose start-up cannot do without one of them (another version than the one this was
    measured with) is imported again as it is, its half-started modules dropped first."""
    if "mlflow" in sys.modules:
        return
    with collections_held():  # its modules live as long as the process (tunegate.processes.held_collections)
        _import_without_refused()


def _import_without_refused() -> None:
    refused = _Refused(tuple(n for n in NOT_FOR_TRACKING if n not in sys.modules), threading.get_ident())
    sys.meta_path.insert(0, refused)
    try:
        import mlflow  # noqa: F401
        return
    except ImportError:
        if not refused.names or importlib.util.find_spec("mlflow") is None:
            raise  # nothing was refused, or no MLflow: the error is MLflow's own
    finally:
        sys.meta_path.remove(refused)
    for name in [m for m in sys.modules if m == "mlflow" or m.startswith("mlflow.")]:
        del sys.modules[name]
    import mlflow  # noqa: F401,F811
