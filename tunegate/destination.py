"""Where a command writes a file: never over one of its inputs, never half a file, never into a FIFO.

    target = destination(Path("report.html"), inputs=[spec, train], force=False, marker=PAGE_MARKER)
    write_file(Path("report.html"), page.encode(), inputs=[spec, train], marker=PAGE_MARKER)
    with written_aside(target) as out:     # a temporary file beside target, renamed onto it at the end
        out.write(b"...")

Every file a command writes goes through here (`check --html`, `lint --html`, the preflight's approval
report, `convert` OUT through tunegate.dataset.convert); a kernel file beside the path guard, so any
wing may write through it. The rules, each a usage error naming the path (exit 2) before anything is
written:
- a symbolic link is written through, as `>` would (a report may live behind a link); a dangling
  link or a loop is refused: there is no file to replace;
- a folder, FIFO (the write would block), device or socket is never written, nor a file of the
  kernel's file systems, `--force` or not: renaming a file over /dev/null run as root would put a
  plain file where every program writes its discards;
- one of the run's inputs (the same file, by device and inode, or the same resolved path: the spec,
  a data file, a config) is never written, `--force` or not;
- an existing file is replaced only when it is a report this tool wrote, or with `--force`. A report
  is recognised by its `marker` in the file's first 4 KiB: the HTML page carries
  `<meta name="generator" content="tunegate ...">` in its head (`tunegate.output.html`); a converted
  JSONL file has no marker, so an existing OUT always needs `--force`.

The bytes go to a temporary file in the target's folder (same file system), are flushed to disk
and renamed onto the target: a reader, a crash or a full disk never leaves half a file, and a
failed write leaves the file that was there as it was. A write error (a full disk, a read-only
folder) is an OutputError naming the path (exit 2), never an internal error.
"""
from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from tunegate.errors import OutputError, UsageError
from tunegate.pathguard import PSEUDO_FILE_SYSTEMS, file_system, open_regular, shown

_HEAD_BYTES = 4096
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

PathLike = str | os.PathLike[str]
T = TypeVar("T")


def destination(path: PathLike, inputs: Iterable[PathLike | None] = (), force: bool = False,
                marker: bytes | None = None, what: str = "") -> Path:
    """The file to write for `path` (its symbolic links followed); UsageError saying why it may not be.

    `what` names the flag or argument in messages (`--html`, `OUT`).
    """
    label = f"{what} {shown(path)}".strip()
    target = _followed(path, label)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot write {label}: {getattr(exc, 'strerror', None) or exc}") from None
    _refuse_special(label, st)
    if _is_an_input(target, st, inputs):
        raise UsageError(f"refusing to overwrite the input {shown(target)}: {label} is one of this run's "
                         "inputs; give another path")
    if not force and not (marker and _carries(target, marker)):
        what_it_is = " and is not a report tunegate wrote" if marker else ""
        raise UsageError(f"{label} exists{what_it_is}; pass --force to replace it, or give another path")
    return target


def _followed(path: PathLike, label: str) -> Path:
    """`path` with its symbolic links followed; a dangling link or a loop is refused."""
    try:
        if not os.path.islink(path):
            return Path(os.path.abspath(path))
        target = os.path.realpath(path)
        os.stat(target)
    except FileNotFoundError:
        raise UsageError(f"{label} is a symbolic link to {shown(os.readlink(path))}, which does not exist: "
                         "give the file's own path") from None
    except (OSError, ValueError) as exc:  # a loop, a NUL byte, a name too long
        raise UsageError(f"cannot write {label}: {getattr(exc, 'strerror', None) or exc}") from None
    if os.path.islink(target):  # realpath gives up on a loop and returns a link
        raise UsageError(f"cannot write {label}: it is a loop of symbolic links")
    return Path(target)


def _refuse_special(label: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{label} is a folder, not a file: give the path of the file to write")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{label} is a device, pipe or socket, not a file: give the path of the file to write")
    kind = file_system(st.st_dev)
    if kind in PSEUDO_FILE_SYSTEMS:
        raise UsageError(f"{label} is a file of the kernel's {kind} file system, not a file to write a report to")


def _is_an_input(target: Path, st: os.stat_result, inputs: Iterable[PathLike | None]) -> bool:
    for given in inputs:
        if given is None or given == "":
            continue
        try:
            other = os.stat(given)
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return True
            if Path(os.path.realpath(given)) == target:
                return True
        except (OSError, ValueError):  # an input that is not there cannot be overwritten
            continue
    return False


def _carries(target: Path, marker: bytes) -> bool:
    """Whether the file's first bytes hold `marker` (a report this tool wrote)."""
    try:
        with open_regular(target) as f:
            return marker in f.read(_HEAD_BYTES)
    except (OSError, UsageError):
        return False


def write_file(path: PathLike, data: bytes, inputs: Iterable[PathLike | None] = (), force: bool = False,
               marker: bytes | None = None, what: str = "") -> Path:
    """Write `data` to `path` under the rules above; return the file written."""
    target = destination(path, inputs, force, marker, what)
    with written_aside(target) as out:
        out.write(data)
    return target


@contextlib.contextmanager
def written_aside(target: Path) -> Iterator[BinaryIO]:
    """A temporary file beside `target`, renamed onto it when the block ends; removed on any error.

    Write errors (a full disk, a read-only folder) become OutputError naming `target`. An existing
    file's permissions are kept; a new one gets the usual ones (0666 less the umask).
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o666
        # A short name of our own: the target's name may already be as long as the folder allows.
        tmp = target.with_name(f".tunegate-{os.urandom(6).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, mode)
    except (OSError, ValueError) as exc:
        raise OutputError(f"cannot write {shown(target)}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        with os.fdopen(fd, "wb") as raw:
            yield _Guarded(raw, target)  # type: ignore[misc]
            _guarded(raw.flush, target)
            _guarded(lambda: os.fsync(raw.fileno()), target)
        _guarded(lambda: os.replace(tmp, target), target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


class _Guarded:
    """A file opened for writing whose errors name the output (OutputError) instead of escaping as OSError."""

    def __init__(self, raw: BinaryIO, target: Path):
        self._raw, self._target = raw, target
        self.name = ""  # gzip.GzipFile would write a name into its header: none, as before

    def write(self, data: bytes) -> int:
        return _guarded(lambda: self._raw.write(data), self._target)

    def flush(self) -> None:
        _guarded(self._raw.flush, self._target)


def _guarded(action: Callable[[], T], target: Path) -> T:
    try:
        return action()
    except OSError as exc:
        raise OutputError(f"cannot write {shown(target)}: {exc.strerror or exc}") from None
