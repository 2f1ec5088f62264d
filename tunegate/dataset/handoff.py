"""Bytes a worker process hands back to the gate's process through a file in shared memory.

    folder = handoff_folder()                   # in the gate's process, once per read
    payload = hand_over(data, folder)           # in a worker: the bytes written to a file there
    with taken(payload) as buffer: ...          # in the gate's process: the bytes, mapped; then a spare

A part's canonical JSONL is as large as the part (8 MB). Returned through the pool's pipe it is
copied five times (bytes(), pickle, the pipe both ways, unpickle), ~0.4 CPU s of kernel time at
200 MB; written once to tmpfs and mapped read-only by the receiver it is copied once. Where the
file cannot be written (no room), the bytes travel through the pipe as before: same result.
Files are reused: the receiver leaves each one as a spare that the next writer claims and writes
over, so a steady read allocates its shared pages once.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_SHARED = "/dev/shm"  # tmpfs on Linux: the file never reaches a disk
_SPARE = ".spare"  # a file a receiver is done with, for the next writer
SPARES = 8  # spare files kept in a folder: about the parts in flight, so a steady read makes none


def handoff_folder(owner: object) -> str:
    """A fresh folder for the files of one read, removed when `owner` is collected."""
    base = _SHARED if os.path.isdir(_SHARED) and os.access(_SHARED, os.W_OK) else None
    folder = tempfile.mkdtemp(prefix="tunegate-parts-", dir=base)
    weakref.finalize(owner, shutil.rmtree, folder, ignore_errors=True)
    return folder


def hand_over(data: bytearray, folder: str | None) -> tuple[str, Any]:
    """("file", (path, length)) once `data` is written to a file in `folder`; ("bytes", data) otherwise.

    A file the receiver is done with (`taken` leaves it as a spare) is written over rather than a
    new one made: its memory pages are already there, so they are neither zeroed for this part
    nor freed after it (that page churn cost about as much CPU as the SHA-256 of the bytes).
    """
    if folder is None or not data:
        return "bytes", bytes(data)
    path = _claim_spare(folder)
    try:
        if path is None:
            fd, path = tempfile.mkstemp(dir=folder, suffix=".part")
        else:
            fd = os.open(path, os.O_WRONLY)
    except OSError:
        return "bytes", bytes(data)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError:  # tmpfs full: the pipe still works
        os.unlink(path)
        return "bytes", bytes(data)
    return "file", (path, len(data))


def _claim_spare(folder: str) -> str | None:
    """A spare file of `folder`, renamed to be this writer's alone (the rename fails for all but one)."""
    try:
        spares = [name for name in os.listdir(folder) if name.endswith(_SPARE)]
    except OSError:
        return None
    for name in spares:
        mine = os.path.join(folder, f"{name.removesuffix(_SPARE)}-{os.getpid()}.part")
        try:
            os.rename(os.path.join(folder, name), mine)
        except OSError:  # another worker took it first
            continue
        return mine
    return None


@contextmanager
def taken(payload: tuple[str, Any]) -> Iterator[Any]:
    """The bytes of a payload from `hand_over`; a file is mapped, then left as a spare for the next."""
    kind, value = payload
    if kind == "bytes":
        yield value
        return
    path, length = value
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), length, access=mmap.ACCESS_READ) as mapped:
            yield mapped
    finally:
        _leave_spare(path)


def _leave_spare(path: str) -> None:
    """Keep the file for a later part, under a name no writer holds; at most SPARES are kept."""
    folder = os.path.dirname(path)
    try:
        kept = sum(name.endswith(_SPARE) for name in os.listdir(folder))
        if kept < SPARES:
            os.rename(path, os.path.join(folder, f"s{uuid.uuid4().hex}{_SPARE}"))
            return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.unlink(path)
