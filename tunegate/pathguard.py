"""The one guard for every path a user names: read it only when it is a regular file.

    with open_regular(Path("data/train.jsonl")) as f:   # UsageError saying why not
        ...
    refusal(Path("/dev/zero"))   # '/dev/zero is not a regular file (a device, pipe or socket)'

Every command that takes a path shares it (the spec, data files, an approval report): a folder, a
FIFO (a read would block forever), a device such as /dev/zero (an endless stream), a socket and a
symlink loop are refused with a sentence naming the path, never opened for a blocking read.
`open_regular` opens without blocking and checks what it opened (fstat), so a path swapped for a
FIFO between the check and the open is refused too. `shown` turns any path into one printable line
of valid UTF-8 (a file name need not be either), for reports, JSON and the terminal.
"""
from __future__ import annotations

import os
import re
import stat
from typing import BinaryIO

from tunegate.errors import UsageError

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: a file name
# holding them could start a new line of output that looks like one of ours.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def shown(path: str | os.PathLike[str] | bytes) -> str:
    """The path as one printable line of UTF-8: undecodable bytes as \\xNN, control characters escaped."""
    text = os.fsdecode(path)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no byte decodes to: name it, do not crash on it
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def refusal(path: str | os.PathLike[str]) -> str | None:
    """Why `path` cannot be read as a file, or None when it is a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"{shown(path)} does not exist"
    except OSError as exc:  # a symlink loop, a permission on a parent folder, a name too long
        return f"{shown(path)}: {exc.strerror or exc}"
    except ValueError:  # a NUL byte in the name
        return f"{shown(path)} is not a valid path"
    return _not_regular(path, st.st_mode)


def _not_regular(path: str | os.PathLike[str], mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return f"{shown(path)} is a folder, not a file"
    if not stat.S_ISREG(mode):
        return f"{shown(path)} is not a regular file (a device, pipe or socket)"
    return None


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
        problem = _not_regular(path, os.fstat(fd).st_mode)
        if problem:
            raise UsageError(problem)
        if _NONBLOCK:
            os.set_blocking(fd, True)
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

