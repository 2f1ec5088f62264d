"""The full run: only from an approval that still matches the files, launched as the cluster would.

    tunegate launch examples/quickstart.yaml

    approval = approved_report(parse_spec("run.yaml"))   # ApprovalError when missing or stale
    result = launch(spec, "run.yaml")                     # the trainer under accelerate/torchrun/python
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"approved_report": "tunegate.fullrun.approval", "launch": "tunegate.fullrun.launcher"}

__all__ = ["approved_report", "launch"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
