"""Stage 3, estimate: memory per GPU, tokens/s, hours and cost of the full run, from config.json alone.

    est = estimate_run(spec)            # no weights, no torch
    est.summary()["memory"]["verdict"]  # "fits" | "tight" | "does not fit"

The shapes and parameter counts are `architecture.py`; the memory terms `memory.py` and
`activations.py`; the FLOPs and MFU `throughput.py`; what the models read of a spec `setup.py`.
"""
from tunegate.estimate.run import Estimate, estimate_run

__all__ = ["Estimate", "estimate_run"]
