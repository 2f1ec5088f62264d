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

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"propose": "tunegate.sweep.candidates", "evaluate_candidate": "tunegate.sweep.evaluate"}

__all__ = ["evaluate_candidate", "propose"]
__getattr__ = front_door(__name__, _HOME)
