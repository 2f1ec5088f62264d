"""The near-duplicate index in files that every process maps read-only.

    write_index(folder, num_perm, bands)         # beside the folder's rows and places: keys, order, look-up
    folder = share_index(index)                  # an index built in memory, written out for worker processes
    index = load_index(folder, num_perm, bands)  # in any process, once per process
    drop_index(folder)                           # when the streamed split is done

A worker reading a part of the streamed split needs the whole index (rows, sorted band keys,
places, exact hashes: ~0.7 KB a record) and the compiled look-up of its keys (~0.2-0.45 KB a record).
Sent with every part it would be pickled hundreds of times, and each worker would build its own
look-up; as files memory-mapped read-only, every worker reads the same pages of the OS cache. A big
index (tunegate.overlap.near_index) is written here from the start and never held in the heap:
its rows are read back a slice at a time to compute the band keys, and the look-up is written
straight into its file's map. Mapped, a process holds only the pages it reads: the look-up, and
the rows of the candidates it checks.

The files, raw and native-endian: `rows` (n x num_perm uint32), `places` (n plain_index.PLACE),
`sorted_keys` (bands x n uint64, each band sorted), `order` (bands x n uint32: the row of each
sorted key; a band holds fewer than 2**32 keys, the look-up's own limit, and every process maps the
whole file: half the pages of int64's) and `table.bin` (the look-up's slots, where the extension is
built). Where the extension is built a process maps them as a tunegate.overlap.plain_index.PlainIndex,
without numpy; elsewhere as an lsh.PlacedIndex.
"""
from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path
from typing import Any

from tunegate.native import compiled

_LOADED: dict[str, Any] = {}  # per process: folder -> index
TABLE = "table.bin"


def share_index(index: Any) -> str:
    """Write an index built in memory (a PlainIndex or an lsh.PlacedIndex) into a fresh private
    folder; return its path."""
    from tunegate.overlap.spill import private_folder, write_rows

    folder = private_folder("tunegate-near-", _keep_until_dropped)
    for name, data in index.files():
        write_rows(folder / name, data)
    _write_table(folder / TABLE, index.sorted_keys, index.bands)
    return str(folder)


def _keep_until_dropped() -> None:
    """The owner of shared folders: never collected, so a folder lives until drop_index or exit."""


def write_index(folder: Path, num_perm: int, bands: tuple[int, int]) -> None:
    """The sorted band keys, their rows and the look-up of the rows a folder holds, as files beside them.
    Memory: the band keys (8 bytes a row and band) and a slice of rows at a time; where the
    extension is built, the rows' map, the keys and their rows (12 bytes a row and band), no numpy."""
    from tunegate.overlap.spill import spill_failed, write_rows

    if compiled is not None:
        try:
            rows = _map(folder / "rows")
            try:
                keys, order = compiled.band_index(rows, num_perm, *bands)
            finally:
                if isinstance(rows, mmap.mmap):
                    rows.close()  # its pages leave this process now, not when it is collected
        except OSError as exc:
            raise spill_failed(folder, exc) from exc
        write_rows(folder / "order", order)
        write_rows(folder / "sorted_keys", keys)
        _write_table(folder / TABLE, keys, bands)
        return
    _write_index_in_numpy(folder, num_perm, bands)


def _write_index_in_numpy(folder: Path, num_perm: int, bands: tuple[int, int]) -> None:
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

    n = memoryview(sorted_keys).nbytes // (8 * bands[0])
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


def load_index(folder: str, num_perm: int, bands: tuple[int, int]) -> Any:
    """The index a folder holds, memory-mapped, loaded once per process: a PlainIndex where the
    extension is built, else an lsh.PlacedIndex."""
    found = _LOADED.get(folder)
    if found is None:
        path = Path(folder)
        if compiled is not None:
            found = _plain(path, num_perm, bands)
        else:
            found = _in_numpy(path, num_perm, bands)
        _LOADED[folder] = found
    return found


def _plain(path: Path, num_perm: int, bands: tuple[int, int]) -> Any:
    from tunegate.overlap.plain_index import MappedPlaces, PlainIndex

    sorted_keys = _map(path / "sorted_keys")
    table = _mapped_table(path / TABLE, sorted_keys, bands)
    return PlainIndex(_map(path / "rows"), MappedPlaces(_map(path / "places")), num_perm, bands, sorted_keys,
                      _map(path / "order"), table)


def _in_numpy(path: Path, num_perm: int, bands: tuple[int, int]) -> Any:
    from tunegate.overlap.lsh import PLACE, BandIndex, PlacedIndex
    from tunegate.overlap.numeric import np

    n = os.path.getsize(path / "places") // PLACE.itemsize
    rows = _mapped(np, path / "rows", np.uint32, (n, num_perm))
    sorted_keys = _mapped(np, path / "sorted_keys", np.uint64, (bands[0], n))
    order = _mapped(np, path / "order", np.uint32, (bands[0], n))
    return PlacedIndex(BandIndex.of(rows, bands, sorted_keys, order), _mapped(np, path / "places", PLACE, (n,)))


def _map(path: Path) -> Any:
    """A file's read-only map (b"" for an empty file, which cannot be mapped)."""
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _mapped(np: Any, path: Path, dtype: Any, shape: tuple[int, ...]) -> Any:
    if not all(shape):  # numpy cannot map an empty file
        return np.empty(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def _mapped_table(path: Path, sorted_keys: Any, bands: tuple[int, int]) -> Any:
    """The look-up written beside the keys, over its file's read-only map; None where there is none."""
    if compiled is None or not path.exists():
        return None
    return compiled.BandTable(sorted_keys, bands[0], slots=_map(path))


def drop_index(folder: str) -> None:
    _LOADED.pop(folder, None)
    shutil.rmtree(folder, ignore_errors=True)
