"""Stage 2, overlap: is the validation set really held out? Exact, normalised and near duplicates.

    result = find_overlap(files, observer, settings)   # after the observer has seen both splits

The exact pass hashes every record during the dataset read (`exact.py`, `normalize.py`); the
near-duplicate pass is MinHash LSH (`near.py`); the gate's front door is `stage.py`.
"""
from tunegate.overlap.stage import find_overlap

__all__ = ["find_overlap"]
