"""The one guard for every path a user names: read it only when it is a regular file of real data.

    with open_regular(Path("data/train.jsonl")) as f:   # UsageError saying why not
        ...
    refusal(Path("/dev/zero"))   # '/dev/zero is not a regular file (a device, pipe or socket)'
    refusal(Path("/proc/kmsg"))  # '/proc/kmsg is a file of the kernel's proc file system, not data'

Every command that takes a path shares it (the spec, data files, an approval report): a folder, a
FIFO (a read would block forever), a device such as /dev/zero (an endless stream), a socket and a
symlink loop are refused with a sentence naming the path, never opened for a blocking read.
`open_regular` opens without blocking and checks what it opened (fstat), so a path swapped for a
FIFO between the check and the open is refused too. `shown` turns any path into one printable line
of valid UTF-8 (a file name need not be either), for reports, JSON and the terminal.

A regular file is not always data. The kernel's pseudo file systems (procfs, sysfs, debugfs, ...)
show "regular" files whose read blocks forever (/proc/kmsg waits for the next kernel message) or
never ends: they are refused by the file system a file is on (/proc/self/mountinfo, matched by
st_dev). A file on a file system that is not a local disk (FUSE, NFS, SMB: a mount whose server
stopped answering blocks a read forever) is opened only after a first read of it answers within
READ_DEADLINE_S (a helper thread does that read: select() says a regular file is always ready).
"""
from __future__ import annotations

import functools
import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from tunegate.errors import UsageError

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: a file name
# holding them could start a new line of output that looks like one of ours.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# The kernel's own file systems: their files are views of kernel state, never data to check.
PSEUDO_FILE_SYSTEMS = frozenset({
    "proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "cgroup", "cgroup2", "pstore", "bpf",
    "efivarfs", "fusectl", "binfmt_misc", "devpts", "mqueue", "hugetlbfs", "rpc_pipefs", "nsfs", "selinuxfs",
    "autofs", "devtmpfs"})
# Local disks and memory: a read there answers. Any other file system (FUSE, NFS, SMB, one this
# list does not know) gets a first read with a deadline before it is trusted.
LOCAL_FILE_SYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "jfs", "reiserfs", "bcachefs", "tmpfs", "ramfs",
    "overlay", "squashfs", "iso9660", "vfat", "exfat", "ntfs3", "erofs", "apfs", "hfs", "hfsplus"})
# A first read of a file on a local disk takes well under a millisecond, one over a network a few
# round trips; a mount that has not answered in 5 s is stalled, and the command says so.
READ_DEADLINE_S = 5.0


def shown(path: str | os.PathLike[str] | bytes) -> str:
    """The path as one printable line of UTF-8: undecodable bytes as \\xNN, control characters escaped."""
    text = os.fsdecode(path)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no byte decodes to: name it, do not crash on it
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: by inode where both exist, else by resolved name, else (a
    symlink loop) by absolute name; never raises, as the paths may be anything a user wrote."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        pass
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError, RuntimeError):  # a symlink loop (Python < 3.13 raises RuntimeError)
        return os.path.abspath(a) == os.path.abspath(b)


def refusal(path: str | os.PathLike[str]) -> str | None:
    """Why `path` cannot be read as a file, or None when it is a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"{shown(path)} does not exist"
    except OSError as exc:  # a symlink loop, a permission on a parent folder, a name too long
        return f"{shown(path)}: {exc.strerror or exc}"
    except ValueError:  # a NUL byte in the name
        return f"{shown(path)} is not a valid path (it holds a NUL byte)"
    return _not_regular(path, st)


def _not_regular(path: str | os.PathLike[str], st: os.stat_result) -> str | None:
    if stat.S_ISDIR(st.st_mode):
        return f"{shown(path)} is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return f"{shown(path)} is not a regular file (a device, pipe or socket)"
    kind = file_system(st.st_dev)
    if kind in PSEUDO_FILE_SYSTEMS:
        return (f"{shown(path)} is a file of the kernel's {kind} file system, not data "
                "(a read of it may block forever or never end)")
    return None


def file_system(device: int) -> str | None:
    """The type of the mounted file system whose device number is `device` (st_dev), None if unknown."""
    return _mounts().get(device)


@functools.lru_cache(maxsize=1)
def _mounts() -> dict[int, str]:
    """st_dev -> file system type of every mount this process sees (Linux's /proc/self/mountinfo).

    Each line reads `id parent major:minor root mount-point options [optional...] - type source ...`.
    Elsewhere (macOS, a sandbox without /proc) the map is empty: nothing is refused by its type.
    """
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            text = f.read(1 << 22).decode("utf-8", "replace")
    except OSError:
        return {}
    mounts = {}
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        major, _, minor = fields[2].partition(":")
        try:
            device = os.makedev(int(major), int(minor))
        except ValueError:
            continue
        mounts.setdefault(device, fields[fields.index("-", 6) + 1])
    return mounts


def answers_in_time(read: Callable[[], object], deadline_s: float | None = None) -> bool:
    """Whether `read()` returns (or raises) within `deadline_s` (default READ_DEADLINE_S); a read that has
    not stays blocked in a daemon thread, which dies with the process."""
    thread = threading.Thread(target=_quietly, args=(read,), name="tunegate-first-read", daemon=True)
    thread.start()
    thread.join(READ_DEADLINE_S if deadline_s is None else deadline_s)
    return not thread.is_alive()


def _quietly(read: Callable[[], object]) -> None:
    try:
        read()
    except (OSError, ValueError):  # the real read reports it, where it has the file's name
        pass


def _first_read_answers(fd: int, st: os.stat_result) -> bool:
    """A file on a local disk answers; elsewhere one byte at offset 0 must come back in time (pread
    leaves the file's position where it was)."""
    if file_system(st.st_dev) in LOCAL_FILE_SYSTEMS:
        return True
    return answers_in_time(lambda: os.pread(fd, 1, 0))


def open_regular(path: str | os.PathLike[str], buffering: int = -1) -> BinaryIO:
    """Open `path` for reading bytes if it is a regular file; UsageError saying why not."""
    problem = refusal(path)
    if problem:
        raise UsageError(problem)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        problem = _not_regular(path, st)
        if problem:
            raise UsageError(problem)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        if not _first_read_answers(fd, st):
            raise UsageError(f"cannot read {shown(path)}: its file system did not answer a read within "
                             f"{READ_DEADLINE_S:g} s (a network or FUSE mount that stalled?)")
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most `limit` bytes of the regular file at `path`; UsageError when it cannot be read."""
    with open_regular(path) as f:
        try:
            return f.read(limit)
        except OSError as exc:
            raise UsageError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None

