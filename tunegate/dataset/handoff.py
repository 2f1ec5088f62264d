"""Bytes a worker process hands back to the gate's process through a file in shared memory.

    folder = handoff_folder()                   # in the gate's process, once per read
    payload = hand_over(chunks, folder)         # in a worker: the bytes (one object, or a list) written there
    with taken(payload) as buffer: ...          # in the gate's process: the bytes, mapped; then a spare

A part's canonical lines that a worker had to serialise itself (tunegate.dataset.part_lines: the
others the gate's process copies from the file) can be as large as the part (8 MB). Returned through
the pool's pipe they are copied five times (bytes(), pickle, the pipe both ways, unpickle), ~0.4 CPU
s of kernel time at 200 MB; written once to tmpfs and mapped read-only by the receiver they are
copied once. A worker hands over its lines as a list, written with one writev per IOV_MAX of them:
gathered first into one buffer (a bytearray grown line by line) they were copied twice more. Where
the file cannot be written (no room), the bytes travel through the pipe as before: same result.
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
try:  # the most buffers one writev takes
    _IOV_MAX = max(16, os.sysconf("SC_IOV_MAX"))
except (AttributeError, ValueError, OSError):
    _IOV_MAX = 16


def handoff_folder(owner: object) -> str:
    """A fresh folder for the files of one read, removed when `owner` is collected."""
    base = _SHARED if os.path.isdir(_SHARED) and os.access(_SHARED, os.W_OK) else None
    folder = tempfile.mkdtemp(prefix="tunegate-parts-", dir=base)
    weakref.finalize(owner, shutil.rmtree, folder, ignore_errors=True)
    return folder


def hand_over(data: bytes | bytearray | list[bytes], folder: str | None) -> tuple[str, Any]:
    """("file", (path, length)) once `data` (a buffer, or a list of them in order) is written to a
    file in `folder`; ("bytes", its bytes) otherwise.

    A file the receiver is done with (`taken` leaves it as a spare) is written over rather than a
    new one made: its memory pages are already there, so they are neither zeroed for this part
    nor freed after it (that page churn cost about as much CPU as the SHA-256 of the bytes).
    """
    chunks = data if isinstance(data, list) else [data]
    length = sum(map(len, chunks))
    if folder is None or not length:
        return "bytes", b"".join(chunks)
    path = _claim_spare(folder)
    try:
        if path is None:
            fd, path = tempfile.mkstemp(dir=folder, suffix=".part")
        else:
            fd = os.open(path, os.O_WRONLY)
    except OSError:
        return "bytes", b"".join(chunks)
    try:
        write_all(fd, chunks)
    except OSError:  # tmpfs full: the pipe still works
        os.unlink(path)
        return "bytes", b"".join(chunks)
    finally:
        os.close(fd)
    return "file", (path, length)


def write_all(fd: int, chunks: list[Any]) -> None:
    """Write `chunks` in order to `fd` (a file, or a pipe: tunegate.dataset.forked_pool's frames):
    writev, IOV_MAX pieces a call, any short write resumed."""
    for at in range(0, len(chunks), _IOV_MAX):
        batch = chunks[at:at + _IOV_MAX]
        written = os.writev(fd, batch)
        wanted = sum(map(len, batch))
        if written < wanted:  # a signal or a full disk cut it short: the rest, plainly
            rest = memoryview(b"".join(batch))[written:]
            while rest:
                rest = rest[os.write(fd, rest):]


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
