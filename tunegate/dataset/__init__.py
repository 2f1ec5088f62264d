"""Stage 1, dataset: every data file read once, strictly, against the chat contract, with stats.

    from tunegate.dataset import validate_dataset
    result = validate_dataset({"train": Path("train.jsonl"), "validation": Path("val.jsonl")})
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"validate_dataset": "tunegate.dataset.stage"}

__all__ = ["validate_dataset"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
