"""A tiny streaming JSONL reader for `tunegate fingerprint` and the near-duplicate pass.

The gate's real reader is the dataset stage, which reports every defect as a finding. This one
serves the two places that read a file outside that stage: the fingerprint command (strict: a
line it cannot read is an error, because a digest of half a file would be a lie) and the second,
optional near-duplicate pass (lenient: the dataset stage has already judged the file, so lines it
rejected are skipped here). Gzip files are read transparently (recognised by their magic bytes).
"""
from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from tunegate.errors import TunegateError, UsageError

_GZIP_MAGIC = b"\x1f\x8b"


class UnreadableRecord(TunegateError):
    """A line of the file is not one JSON object (strict reading only)."""


def iter_records(path: Path, *, strict: bool = True) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Yield `(line, index, record)` for every JSON-object line: 1-based physical line, 0-based index.

    Blank lines are skipped (they hold no record). Raises UsageError when the file cannot be
    opened and, when `strict`, UnreadableRecord at the first line that is not a JSON object or
    where a gzip stream breaks off.
    """
    index = 0
    line_no = 0
    with _open(path) as stream:
        try:
            for line_no, raw in enumerate(stream, 1):
                record = _parse(raw, path, line_no, strict) if raw.strip() else None
                if record is not None:
                    yield line_no, index, record
                    index += 1
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
            if strict:
                raise UnreadableRecord(f"{path}:{line_no + 1}: cannot read further: {exc}") from None


def _parse(raw: bytes, path: Path, line_no: int, strict: bool) -> dict[str, Any] | None:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if strict:
            raise UnreadableRecord(f"{path}:{line_no}: not valid JSON ({exc})") from None
        return None
    if not isinstance(record, dict):
        if strict:
            raise UnreadableRecord(f"{path}:{line_no}: a record must be a JSON object, "
                                   f"got {type(record).__name__}")
        return None
    return record


def _open(path: Path) -> IO[bytes]:
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        return gzip.open(path, "rb") if magic == _GZIP_MAGIC else open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise UsageError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder, not a file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def feed_observers(files: dict[str, Path], observers: Sequence[Any]) -> None:
    """Read each split once and feed every record to the observers, as the dataset stage does.

    For tests and benchmarks that exercise the observers without the dataset stage.
    """
    for role, path in files.items():
        for line, index, record in iter_records(path, strict=False):
            for observer in observers:
                observer.observe(role, line, index, record)
        for observer in observers:
            observer.finish(role)
