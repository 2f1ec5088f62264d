"""Write a data file of any format tunegate reads as OpenAI chat JSONL, losslessly (`tunegate convert`).

    refuse_unsafe(Path("sharegpt.json"), Path("train.jsonl"), force=False)   # before any work
    convert_file(Path("sharegpt.json"), Path("train.jsonl"))                 # the records written

Every key of every record is kept (`tunegate.formats.to_messages`). The output is written to a
temporary file and renamed into place, then its content digest is compared with the input's
(both in chat form): they must be equal, or the output is removed. The input is never
overwritten, nor an existing output without `force`. Check the input first (the dataset stage):
a record with a defect cannot be converted faithfully.
"""
from __future__ import annotations

import gzip
import os
import stat
import tempfile
from pathlib import Path

import orjson

from tunegate.dataset.fingerprint import fingerprint_file, json_default
from tunegate.dataset.records import iter_canonical
from tunegate.errors import TunegateError, UsageError
from tunegate.pathguard import shown


def refuse_unsafe(source: Path, target: Path, force: bool) -> None:
    """Raise a UsageError when writing `target` would replace the input, a file (unless `force`),
    or something that is not a file."""
    try:
        mode = os.lstat(target).st_mode
    except OSError:
        mode = None
    # A folder, device, FIFO or socket is never replaced, --force or not: renaming the output over
    # /dev/null (run as root) would put a plain file where every program writes its discards.
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = "a folder" if stat.S_ISDIR(mode) else "a device, pipe or socket"
        raise UsageError(f"OUT {shown(target)} is {kind}, not a file: give the path of the JSONL file to write")
    if target.exists() or target.is_symlink():
        if source.exists() and (target.resolve() == source.resolve() or os.path.samefile(source, target)):
            raise UsageError(f"refusing to overwrite the input {source}: give another OUT")
        if not force:
            raise UsageError(f"{target} exists; pass --force to replace it")


def convert_file(source: Path, target: Path, fmt: str = "auto", force: bool = False) -> int:
    """Write `source` (in `fmt`, or detected) to `target` as OpenAI chat JSONL (gzip when it ends in
    .gz) and check its digest against the input's; the number of records written."""
    refuse_unsafe(source, target, force)
    written = _write(source, target, fmt)
    _verify(source, target)
    return written


def _write(source: Path, target: Path, fmt: str) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    count = 0
    try:
        with os.fdopen(fd, "wb") as raw:
            out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if target.name.endswith(".gz") else raw
            for _, _, record in iter_canonical(source, fmt, strict=True):
                # A number a double cannot hold is read as a Decimal: written back digit for digit.
                out.write(orjson.dumps(record, default=json_default) + b"\n")
                count += 1
            if out is not raw:
                out.close()
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def _verify(source: Path, target: Path) -> None:
    """The output's digest must equal the input's: nothing was lost or changed on the way."""
    before, after = fingerprint_file(source), fingerprint_file(target)
    if (before.digest, before.records) != (after.digest, after.records):
        target.unlink(missing_ok=True)
        raise TunegateError(f"the written file does not match {source} ({after.records} vs {before.records} "
                            "records, digests differ); it was removed. This is a bug in tunegate: please report it.")
