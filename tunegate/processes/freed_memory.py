"""Heap memory a process freed: handed back to the system at the moment a big piece of it was
freed, or kept for the next allocations of a process that frees and allocates the same blocks.

    give_back_freed()    # after dropping what a phase held: True where the C library could do it
    keep_freed_blocks()  # a training process's start: True where the C library could be told

glibc keeps what a process frees for its later allocations: a block in the middle of the heap stays
resident (counted in RSS) until something reuses it. Where a phase that held a known big block ends
(a split's overlap hashes moved to disk, a candidate's mini-run done), `malloc_trim(0)` returns
every free page of the heap at once. Elsewhere (musl, macOS) nothing happens.

The other way round, a block of 128 KB or more is its own mapping, handed back when it is freed,
and the next such allocation faults every page in again, zeroed by the kernel. glibc raises that
threshold as such blocks are freed (up to 32 MB on 64-bit), but every child of the fork server
starts from the threshold the server had, and the blocks a candidate's job allocated and freed
again and again came as fresh mappings: ~113,000 page faults and 0.18-0.24 CPU s of system time a
job on the tiny model, against ~72,000 and 0.11-0.20 s with the threshold at glibc's own ceiling and
the heap's free top kept up to TRIM_KEPT (docs/benchmarks.md, session 46). `keep_freed_blocks` sets
both (mallopt); the heap then holds up to TRIM_KEPT of freed memory more (the preflight's mini-run
logged a peak RSS ~10 MB higher), and `give_back_freed` still returns all of it at once.
"""
from __future__ import annotations

from functools import cache
from typing import Any

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (glibc's malloc.h)
MMAP_FROM = 32 << 20  # blocks this big or bigger are mappings of their own: glibc's ceiling for its threshold
TRIM_KEPT = 64 << 20  # free memory at the heap's top it keeps before handing any back


def give_back_freed() -> bool:
    """Return the heap's free pages to the system (glibc's malloc_trim); whether it could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def keep_freed_blocks() -> bool:
    """Keep freed blocks below MMAP_FROM on the heap for the next allocations (see the module doc);
    whether the C library took the setting (glibc's mallopt answers 1)."""
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_FROM)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_KEPT))


def _malloc_trim() -> Any:
    return _libc_function("malloc_trim")


@cache
def _libc_function(name: str) -> Any:
    import ctypes

    try:
        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None
