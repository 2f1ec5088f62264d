"""Bytes a worker process hands back to the gate's process through a file in shared memory.

    folder = handoff_folder()                   # in the gate's process, once per read
    payload = hand_over(data, folder)           # in a worker: the bytes written to a file there
    with taken(payload) as buffer: ...          # in the gate's process: the bytes, mapped; then gone

A part's canonical JSONL is as large as the part (8 MB). Returned through the pool's pipe it is
copied five times (bytes(), pickle, the pipe both ways, unpickle), ~0.4 CPU s of kernel time at
200 MB; written once to tmpfs and mapped read-only by the receiver it is copied once. Where the
file cannot be written (no room), the bytes travel through the pipe as before: same result.
"""
from __future__ import annotations

import mmap
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_SHARED = "/dev/shm"  # tmpfs on Linux: the file never reaches a disk


def handoff_folder(owner: object) -> str:
    """A fresh folder for the files of one read, removed when `owner` is collected."""
    base = _SHARED if os.path.isdir(_SHARED) and os.access(_SHARED, os.W_OK) else None
    folder = tempfile.mkdtemp(prefix="tunegate-parts-", dir=base)
    weakref.finalize(owner, shutil.rmtree, folder, ignore_errors=True)
    return folder


def hand_over(data: bytearray, folder: str | None) -> tuple[str, Any]:
    """("file", path) once `data` is written to a new file in `folder`; ("bytes", data) otherwise."""
    if folder is None or not data:
        return "bytes", bytes(data)
    try:
        fd, path = tempfile.mkstemp(dir=folder, suffix=".part")
    except OSError:
        return "bytes", bytes(data)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError:  # tmpfs full: the pipe still works
        os.unlink(path)
        return "bytes", bytes(data)
    return "file", path


@contextmanager
def taken(payload: tuple[str, Any]) -> Iterator[Any]:
    """The bytes of a payload from `hand_over`; a file is mapped, then removed."""
    kind, value = payload
    if kind == "bytes":
        yield value
        return
    try:
        with open(value, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield mapped
    finally:
        os.unlink(value)
