"""The near-duplicate index in files that every process maps read-only.

    write_index(folder, num_perm, bands)         # beside the folder's rows and places: keys, order, look-up
    folder = share_index(index, places)          # an index built in memory, written out for worker processes
    index, places = load_index(folder, num_perm, bands)  # in any process, once per process
    drop_index(folder)                           # when the streamed split is done

A worker reading a part of the streamed split needs the whole index (rows, sorted band keys,
places, exact hashes: ~0.7 KB a record) and the compiled look-up of its keys (~0.2-0.45 KB a record).
Sent with every part it would be pickled hundreds of times, and each worker would build its own
look-up; as files memory-mapped read-only, every worker reads the same pages of the OS cache. A big
index (tunegate.overlap.near_index) is written here from the start and never held in the heap:
its rows are read back a slice at a time to compute the band keys, and the look-up is written
straight into its file's map. Mapped, a process holds only the pages it reads: the look-up, and
the rows of the candidates it checks.

The files, raw and native-endian: `rows` (n x num_perm uint32), `places` (n near_index.PLACE),
`sorted_keys` (bands x n uint64, each band sorted), `order` (bands x n uint32: the row of each
sorted key; a band holds fewer than 2**32 keys, the look-up's own limit, and every process maps the
whole file: half the pages of int64's) and `table.bin` (the look-up's slots, where the extension is
built).
"""
from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path
from typing import Any

from tunegate.native import compiled

_LOADED: dict[str, tuple[Any, Any]] = {}  # per process: folder -> index
TABLE = "table.bin"


def share_index(index: Any, places: Any) -> str:
    """Write an index built in memory into a fresh private folder; return its path."""
    from tunegate.overlap.near_index import PLACE
    from tunegate.overlap.numeric import np
    from tunegate.overlap.spill import private_folder, write_rows

    folder = private_folder("tunegate-near-", _keep_until_dropped)
    write_rows(folder / "rows", np.ascontiguousarray(index.rows, dtype=np.uint32).tobytes())
    write_rows(folder / "places", np.ascontiguousarray(places, dtype=PLACE).tobytes())
    write_rows(folder / "sorted_keys", np.ascontiguousarray(index.sorted_keys).tobytes())
    write_rows(folder / "order", np.ascontiguousarray(index.order, dtype=np.uint32).tobytes())
    _write_table(folder / TABLE, np.ascontiguousarray(index.sorted_keys), index.bands)
    return str(folder)


def _keep_until_dropped() -> None:
    """The owner of shared folders: never collected, so a folder lives until drop_index or exit."""


def write_index(folder: Path, num_perm: int, bands: tuple[int, int]) -> None:
    """The sorted band keys, their rows and the look-up of the rows a folder holds, as files beside them.
    Memory: the band keys (8 bytes a row and band) and a slice of rows at a time."""
    from tunegate.overlap.near_index import file_band_keys
    from tunegate.overlap.numeric import np
    from tunegate.overlap.spill import spill_failed, write_rows

    n = os.path.getsize(folder / "rows") // (4 * num_perm)
    keys = np.empty((bands[0], n), dtype=np.uint64)
    try:
        for start, chunk in file_band_keys(folder / "rows", num_perm, bands):
            keys[:, start:start + len(chunk)] = chunk.T
    except OSError as exc:
        raise spill_failed(folder, exc) from exc
    for band in keys:  # sorted band by band, in place: numpy's stable argsort, as BandIndex.build
        order = np.argsort(band, kind="stable")
        band[:] = band[order]
        write_rows(folder / "order", order.astype(np.uint32).tobytes())
    write_rows(folder / "sorted_keys", keys.tobytes())
    _write_table(folder / TABLE, keys, bands)


def _write_table(path: Path, sorted_keys: Any, bands: tuple[int, int]) -> None:
    from tunegate.overlap.spill import spill_failed

    n = sorted_keys.size // bands[0]
    if compiled is None or not n:
        return
    size = compiled.BandTable.slots_bytes(n, bands[0])
    try:
        with open(path, "w+b") as f:
            # The blocks taken now: a full disk is an error here, where writing through the map into
            # a sparse file would kill the process (SIGBUS) at the first page it cannot store.
            os.posix_fallocate(f.fileno(), 0, size)
            with mmap.mmap(f.fileno(), size) as shared:
                table = compiled.BandTable(sorted_keys, bands[0], slots=shared, fill=True)
                del table  # lets go of the map before it closes
    except OSError as exc:
        raise spill_failed(path.parent, exc) from exc


def load_index(folder: str, num_perm: int, bands: tuple[int, int]) -> tuple[Any, Any]:
    """The index a folder holds (memory-mapped) and its places, loaded once per process."""
    found = _LOADED.get(folder)
    if found is None:
        from tunegate.overlap.lsh import BandIndex
        from tunegate.overlap.near_index import PLACE
        from tunegate.overlap.numeric import np

        path = Path(folder)
        n = os.path.getsize(path / "places") // PLACE.itemsize
        rows = _mapped(np, path / "rows", np.uint32, (n, num_perm))
        sorted_keys = _mapped(np, path / "sorted_keys", np.uint64, (bands[0], n))
        order = _mapped(np, path / "order", np.uint32, (bands[0], n))
        table = _mapped_table(path / TABLE, sorted_keys, bands)
        index = BandIndex.of(rows, bands, sorted_keys, order, table)
        found = _LOADED[folder] = (index, _mapped(np, path / "places", PLACE, (n,)))
    return found


def _mapped(np: Any, path: Path, dtype: Any, shape: tuple[int, ...]) -> Any:
    if not all(shape):  # numpy cannot map an empty file
        return np.empty(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def _mapped_table(path: Path, sorted_keys: Any, bands: tuple[int, int]) -> Any:
    """The look-up written beside the keys, over its file's read-only map; None where there is none."""
    if compiled is None or not path.exists():
        return None
    with open(path, "rb") as f:
        shared = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return compiled.BandTable(sorted_keys, bands[0], slots=shared)


def drop_index(folder: str) -> None:
    _LOADED.pop(folder, None)
    shutil.rmtree(folder, ignore_errors=True)
