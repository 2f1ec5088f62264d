"""Stage 4, the mini-run: real LoRA steps on a sample, exercising the full run's whole lifecycle.

    result, facts = run_mini_lora(spec, {"train": spec.data.train, "validation": spec.data.validation})

The steps are `session.py` (load, audit, train, evaluate, save and reload), `steps.py` (the
optimizer and evaluation steps with their health checks) and `adapter_check.py` (the reload).
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"run_mini_lora": "tunegate.minirun.stage"}

__all__ = ["run_mini_lora"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
