"""Stage 2, overlap: is the validation set really held out? Exact, normalised and near duplicates.

    result = find_overlap(files, observer, settings)   # after the observer has seen both splits

The exact pass hashes every record during the dataset read (`exact.py`, `normalize.py`); the
near-duplicate pass is MinHash LSH (`near.py`); the gate's front door is `stage.py`.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"find_overlap": "tunegate.overlap.stage"}

__all__ = ["find_overlap"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
