"""Stage 3, estimate: memory per GPU, tokens/s, hours and cost of the full run, from config.json alone.

    est = estimate_run(spec)            # no weights, no torch
    est.summary()["memory"]["verdict"]  # "fits" | "tight" | "does not fit"

The shapes and parameter counts are `architecture.py`; the memory terms `memory.py` and
`activations.py`; the FLOPs and MFU `throughput.py`; what the models read of a spec `setup.py`.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = dict.fromkeys(["Estimate", "estimate_run"], "tunegate.estimate.run")

__all__ = ["Estimate", "estimate_run"]
__getattr__ = front_door(__name__, _HOME)
