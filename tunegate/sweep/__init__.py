"""Sweeps: many candidates of one spec, each gated before it may train, on one frozen validation set.

    candidates = propose(spec)                                   # a list or a grid
    outcome = evaluate_candidate(parsed, overrides, base, session, train_steps=20)

`candidates.py` proposes and writes candidate specs; `evaluate.py` gates, trains and scores one;
`summary.py` tabulates; `nomad_*.py` let NOMAD (PyNomadBBO) propose the candidates instead;
`local_api.py` starts the Prefect API a sweep uses, serving `local_app.py`.
"""
from __future__ import annotations

from typing import Any

__all__ = ["evaluate_candidate", "propose"]


def __getattr__(name: str) -> Any:
    # Loaded on first use (PEP 562): the local API's child imports tunegate.sweep.local_app alone,
    # not the spec models and the gate the sweep itself needs (~0.2 s of its start-up).
    if name == "propose":
        from tunegate.sweep.candidates import propose

        return propose
    if name == "evaluate_candidate":
        from tunegate.sweep.evaluate import evaluate_candidate

        return evaluate_candidate
    raise AttributeError(f"module 'tunegate.sweep' has no attribute {name!r}")
