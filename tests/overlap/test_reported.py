"""The keys the dataset stage reported as byte-identical repeats: in order, on disk past a size, read once."""
from __future__ import annotations

import gc

import numpy as np

from tunegate.overlap import reported
from tunegate.overlap.reported import ReportedKeys


def test_keys_past_the_memory_budget_go_to_disk_and_match_as_a_set_would(monkeypatch):
    monkeypatch.setattr(reported, "KEPT", 7)
    keys = ReportedKeys()
    wanted = sorted(set(np.random.default_rng(3).integers(0, 500, 120).tolist()))
    for key in wanted:
        keys.add(key)
    assert keys.folder is not None and len(keys) == len(wanted)
    assert keys.all().tolist() == wanted
    mask = keys.matcher()
    for start in range(0, 500, 37):  # chunks of a split's records, in order
        chunk = np.arange(start, min(start + 37, 500), dtype=np.int64)
        assert mask(chunk).tolist() == [k in wanted for k in chunk.tolist()]


def test_reported_keys_on_disk_are_removed_with_them(monkeypatch):
    monkeypatch.setattr(reported, "KEPT", 2)
    keys = ReportedKeys()
    for key in range(5):
        keys.add(key)
    folder = keys.folder
    assert folder.exists()
    del keys
    gc.collect()
    assert not folder.exists()
