"""Write a data file of any format tunegate reads as OpenAI chat JSONL, losslessly (`tunegate convert`).

    refuse_unsafe(Path("sharegpt.json"), Path("train.jsonl"), force=False)   # before any work
    convert_file(Path("sharegpt.json"), Path("train.jsonl"))                 # the records written

Every key of every record is kept (`tunegate.formats.to_messages`). The output is written to a
temporary file and renamed into place, then its content digest, read back, is compared with the
digest of the records written (both in chat form: the input's fingerprint, taken as its records are
written, so the input is read once): they must be equal, or the output is removed. This is the one
place convert writes, through `tunegate.destination`: the input, a folder, a FIFO, a device or a kernel
file is never overwritten, `force` or not, nor an existing output without `force`; a symbolic link
is written through, a dangling one or a loop refused; a write error (a full disk) is an OutputError
naming OUT. Check the input first (the dataset stage): a record with a defect cannot be converted
faithfully.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import orjson

from tunegate import progress
from tunegate.dataset.fingerprint import SplitDigest, fingerprint_file, json_default
from tunegate.dataset.records import iter_canonical
from tunegate.errors import TunegateError
from tunegate.destination import destination, written_aside
from tunegate.pathguard import shown


def refuse_unsafe(source: Path, target: Path, force: bool) -> Path:
    """The file to write for `target` (its links followed); a UsageError when writing it would replace
    the input, an existing file (unless `force`), or something that is not a file."""
    return destination(target, [source], force, what="OUT")


def convert_file(source: Path, target: Path, fmt: str = "auto", force: bool = False) -> int:
    """Write `source` (in `fmt`, or detected) to `target` as OpenAI chat JSONL (gzip when it ends in
    .gz) and check its digest against the input's; the number of records written."""
    written_to = refuse_unsafe(source, target, force)
    before = _write(source, written_to, fmt)
    _verify(source, written_to, before)
    return before.records


def _write(source: Path, target: Path, fmt: str) -> SplitDigest:
    """Write the records; the digest of what was written, as `fingerprint_file(source)` takes it."""
    digest = SplitDigest()
    with written_aside(target) as raw, progress.step(f"writing {shown(target.name)}", unit="records") as bar:
        out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if target.name.endswith(".gz") else raw
        for _, _, record in iter_canonical(source, fmt, strict=True):
            # A number a double cannot hold is read as a Decimal: written back digit for digit.
            out.write(orjson.dumps(record, default=json_default) + b"\n")
            digest.add(record)
            bar.done = digest.records
        if out is not raw:
            out.close()
    return digest


def _verify(source: Path, target: Path, written: SplitDigest) -> None:
    """The output's digest, read back, must equal the digest of the input's records: nothing was lost
    or changed on the way."""
    before = written.result()
    with progress.step(f"checking {shown(target.name)} against {shown(source.name)}"):
        after = fingerprint_file(target)
    if (before.digest, before.records) != (after.digest, after.records):
        target.unlink(missing_ok=True)
        raise TunegateError(f"the written file does not match {shown(source)} ({after.records} vs {before.records} "
                            "records, digests differ); it was removed. This is a bug in tunegate: please report it.")
