"""Private temporary folders for the indexes that go to disk past a size, and their write errors.

    space = TempSpace("the repeated-record index's temporary files", "~24 bytes a record")
    folder = space.folder("tunegate-repeats-", owner)   # removed when `owner` is collected or at exit
    space.write(folder / "rows", data)                   # appended; a full disk is an OutputError

The dataset stage's TG210 index (tunegate.dataset.repeat_spill) and the overlap stage's hashes and
near-duplicate index (tunegate.overlap.spill) spill here; a folder that cannot be written is the
environment's error (exit 2) naming TMPDIR, never an internal error.
"""
from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

from tunegate.errors import OutputError


class TempSpace:
    """Temporary files of one kind: `what` they are and `size`, how much room they take, for the error."""

    def __init__(self, what: str, size: str) -> None:
        self.what, self.size = what, size

    def folder(self, prefix: str, owner: object) -> Path:
        """A fresh temporary folder only this user can read, removed when `owner` is collected or at exit."""
        try:
            folder = Path(tempfile.mkdtemp(prefix=prefix))  # mode 0o700
        except OSError as exc:
            raise self.failed(Path(tempfile.gettempdir()), exc) from exc
        weakref.finalize(owner, shutil.rmtree, folder, True)
        return folder

    def write(self, path: Path, data: bytes, mode: str = "ab") -> None:
        """Append bytes to a file of the folder; a full or read-only disk is the environment's error (exit 2)."""
        try:
            with open(path, mode) as f:
                f.write(data)
        except OSError as exc:
            raise self.failed(path.parent, exc) from exc

    def failed(self, folder: Path, exc: OSError) -> OutputError:
        return OutputError(f"cannot write {self.what} in {folder} ({exc.strerror or exc}): set TMPDIR to a "
                           f"folder with free space ({self.size})")
