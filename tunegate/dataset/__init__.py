"""Stage 1, dataset: every data file read once, strictly, against the chat contract, with stats.

    from tunegate.dataset import validate_dataset
    result = validate_dataset({"train": Path("train.jsonl"), "validation": Path("val.jsonl")})
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"validate_dataset": "tunegate.dataset.stage"}

__all__ = ["validate_dataset"]
__getattr__ = front_door(__name__, _HOME)
