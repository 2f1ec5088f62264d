"""Heap memory a process freed, handed back to the system at the moment a big piece of it was freed.

    give_back_freed()    # after dropping what a phase held: True where the C library could do it

glibc keeps what a process frees for its later allocations: a block in the middle of the heap stays
resident (counted in RSS) until something reuses it. Where a phase that held a known big block ends
(a split's overlap hashes moved to disk, a candidate's mini-run done), `malloc_trim(0)` returns
every free page of the heap at once. Elsewhere (musl, macOS) nothing happens.
"""
from __future__ import annotations

from functools import cache
from typing import Any


def give_back_freed() -> bool:
    """Return the heap's free pages to the system (glibc's malloc_trim); whether it could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@cache
def _malloc_trim() -> Any:
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
