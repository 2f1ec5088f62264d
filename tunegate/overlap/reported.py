"""The keys of one split's records the dataset stage reported as byte-identical repeats (TG210).

    keys = ReportedKeys()
    keys.add(key)                 # in increasing order, as the dataset stage reports them
    mask = keys.matcher()         # mask(indexes): which of these keys were reported; asked in order

The train repeats pass (TG304) leaves those records out. A file of 18 M copies of one record reports
18 M of them, so past KEPT keys (8 bytes each) they go to a file in a private temporary folder and
are read back in blocks, once, as the pass walks its records in order.
"""
from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from typing import Any

from tunegate.overlap.spill import private_folder, write_rows

KEPT = 1 << 20  # keys held in memory (8 MB); also the block read back at once


class ReportedKeys:
    """Record keys in increasing order: the latest in memory, the earlier ones on disk past KEPT."""

    def __init__(self) -> None:
        self.keys = array("q")
        self.stored = 0  # keys in the file
        self.folder = None

    def __len__(self) -> int:
        return self.stored + len(self.keys)

    def add(self, key: int) -> None:
        self.keys.append(key)
        if len(self.keys) >= KEPT:
            if self.folder is None:
                self.folder = private_folder("tunegate-reported-", self)
            write_rows(self.folder / "keys", self.keys.tobytes())
            self.stored += len(self.keys)
            self.keys = array("q")

    def in_memory(self) -> set[int] | None:
        """Every key, as a set, while none has gone to disk; None once some have."""
        return set(self.keys) if self.folder is None else None

    def blocks(self) -> Iterator[Any]:
        """Every key in order, in blocks of at most KEPT."""
        from tunegate.overlap.numeric import np

        if self.folder is not None:
            with open(self.folder / "keys", "rb") as f:
                while block := f.read(KEPT * 8):
                    yield np.frombuffer(block, dtype=np.int64)
        if self.keys:
            yield np.frombuffer(self.keys, dtype=np.int64)

    def all(self) -> Any:
        """Every key as one array (for a split small enough to hold them)."""
        from tunegate.overlap.numeric import np

        return np.concatenate([np.empty(0, dtype=np.int64), *self.blocks()])

    def matcher(self) -> Callable[[Any], Any]:
        """mask(indexes) -> which of `indexes` (increasing, each call past the last) were reported."""
        from tunegate.overlap.numeric import np

        stream = self.blocks()
        held = np.empty(0, dtype=np.int64)
        ended = False

        def mask(indexes: Any) -> Any:
            nonlocal held, ended
            if not len(indexes):
                return np.zeros(0, dtype=bool)
            low, high = indexes.min(), indexes.max()
            held = held[held >= low]
            while not ended and (not len(held) or held[-1] <= high):
                block = next(stream, None)
                ended = block is None
                if block is not None:
                    held = np.concatenate((held, block[block >= low]))
            return np.isin(indexes, held[held <= high])

        return mask
