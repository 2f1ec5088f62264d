"""Stage 2, overlap: is the validation set really held out? Exact, normalised and near duplicates.

    result = find_overlap(files, observer, settings)   # after the observer has seen both splits

The exact pass hashes every record during the dataset read (`exact.py`, `normalize.py`); the
near-duplicate pass is MinHash LSH (`near.py`); the gate's front door is `stage.py`.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"find_overlap": "tunegate.overlap.stage"}

__all__ = ["find_overlap"]
__getattr__ = front_door(__name__, _HOME)
