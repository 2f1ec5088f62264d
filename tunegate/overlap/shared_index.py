"""The near-duplicate index, shared with worker processes through files they map read-only.

    folder = share_index(index, places)     # in the gate's process, once the smaller split is indexed
    index, places = load_index(folder, settings)   # in each worker, once per process
    drop_index(folder)                      # when the streamed split is done

A worker reading a part of the streamed split needs the whole index (rows, sorted band keys,
places, exact hashes: ~0.7 KB a record). Sent with every part it would be pickled hundreds of
times; as .npy files memory-mapped read-only, every worker reads the same pages of the OS cache.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

_LOADED: dict[str, tuple[Any, Any]] = {}  # per process: folder -> index


def share_index(index: Any, places: Any) -> str:
    """Write the index into a fresh temporary folder; return its path."""
    from tunegate.overlap.numeric import np

    folder = Path(tempfile.mkdtemp(prefix="tunegate-near-"))
    arrays = {"rows": index.rows, "sorted_keys": index.sorted_keys, "order": index.order, "places": places}
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(array))
    return str(folder)


def load_index(folder: str, settings: Any) -> tuple[Any, Any]:
    """The index a folder holds (memory-mapped), loaded once per process."""
    found = _LOADED.get(folder)
    if found is None:
        from tunegate.overlap.bands import band_layout
        from tunegate.overlap.lsh import BandIndex
        from tunegate.overlap.numeric import np

        a = {name: np.load(Path(folder) / f"{name}.npy", mmap_mode="r")
             for name in ("rows", "sorted_keys", "order", "places")}
        bands = band_layout(settings.threshold, settings.num_perm)
        index = BandIndex.of(a["rows"], bands, a["sorted_keys"], a["order"])
        found = _LOADED[folder] = (index, a["places"])
    return found


def drop_index(folder: str) -> None:
    _LOADED.pop(folder, None)
    shutil.rmtree(folder, ignore_errors=True)
