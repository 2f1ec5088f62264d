"""Sweeps: many candidates of one spec, each gated before it may train, on one frozen validation set.

    candidates = propose(spec)                                   # a list or a grid
    outcome = evaluate_candidate(parsed, overrides, base, session, train_steps=20)

`candidates.py` proposes and writes candidate specs; `budget.py` says how long each trains, how
often it is evaluated and under which pruning rule (`tunegate.pruning`); `evaluate.py` gates, trains
and scores one; `summary.py` tabulates, with each candidate's warnings (`warning_counts.py`);
`winner.py` writes the winner's spec for `--launch-best`; `nomad_*.py` let NOMAD (PyNomadBBO)
propose the candidates instead.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"propose": "tunegate.sweep.candidates", "evaluate_candidate": "tunegate.sweep.evaluate"}

__all__ = ["evaluate_candidate", "propose"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
