"""Stage 3, estimate: memory per GPU, tokens/s, hours and cost of the full run, from config.json alone.

    est = estimate_run(spec)            # no weights, no torch
    est.summary()["memory"]["verdict"]  # "fits" | "tight" | "does not fit"

The shapes and parameter counts are `architecture.py`; the memory terms `memory.py` and
`activations.py`; the FLOPs and MFU `throughput.py`; what the models read of a spec `setup.py`.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = dict.fromkeys(["Estimate", "estimate_run"], "tunegate.estimate.run")

__all__ = ["Estimate", "estimate_run"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
