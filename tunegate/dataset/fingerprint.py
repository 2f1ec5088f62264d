"""Content fingerprints of a data split: a digest that changes exactly when the records change.

    tunegate fingerprint data/train.jsonl data/validation.jsonl
    tunegate fingerprint --algorithm sha256 data/validation.jsonl   # the first version's digest

The digest is a hash over the canonical JSONL of the records: each record re-serialised with
sorted keys and no insignificant whitespace, one per line, in file order (a split of several
files: its files' records in order, one stream, so a split of one file has its file's digest
and the order of the files counts as the order of records does). So it ignores blank
lines, line endings (CRLF/LF), JSON whitespace and key order, and changes with any character of
content and with the order of records (order changes what a run sees, so it is a different data
version). Records of any format are hashed in the chat form every stage reads
(`tunegate.formats.canonical`; an OpenAI chat record is hashed as it is), so a ShareGPT file and
its `tunegate convert` output have the same digest. MLflow's own dataset digest hashes only the
first 10,000 rows of string and number
columns (mlflow/mlflow#11560), so the frozen-validation rule relies on this one instead.

Two versions, named by `Fingerprint.algorithm` and told apart by the digest itself:
`blake3-canonical-jsonl` (the default, written `blake3:<hex>`) and `sha256-canonical-jsonl` (the
first version, bare hex: every digest published before BLAKE3 became the default). Both hash the
same canonical stream; BLAKE3 takes it at ~6 GB/s here where SHA-256 takes ~1.6 GB/s, and the stream
is one (its order is the data's), hashed in the gate's process while workers read: the hash was a
tenth of a whole check's CPU (issue 33). A digest of the first version is still checked in its own
version (`algorithm_of`): an approval, or an experiment's validation data, recorded before stays valid.

The dataset stage hands the fingerprint each JSONL line along with its record: a chat record whose
line already writes its strings as orjson would is copied from the line (its message keys put in
order, whitespace dropped: tunegate/native/canonical.c) instead of serialised again; the bytes
hashed, and so every digest, are the same either way. A file read in parts by worker processes is
hashed here all the same, in file order: a worker sends each such record's line number and this
process copies the line from the file (tunegate.dataset.part_lines).

Numbers are hashed without loss: the readers hand on a number a double cannot hold (an integer
beyond 64 bits, a decimal past 17 digits, an underflow) as a `Decimal`, written here as its exact
value (integers as their digits, others as `d.ddd...e<exp>`). Every other number is written as
orjson writes it, so digests of ordinary data are what they always were.
"""
from __future__ import annotations

import base64
import json
from array import array
from dataclasses import dataclass
from decimal import Decimal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import blake3
import orjson

from tunegate.dataset.handoff import hand_over, handoff_folder, taken
from tunegate.dataset.part_lines import from_file, hash_part, stamp_of
from tunegate.dataset.split import iter_split
from tunegate.errors import UnreadableRecord
from tunegate.native import compiled
from tunegate.pathguard import shown
from tunegate.plain_record import PlainRecord
from tunegate.spec.path_names import split_files

ALGORITHM = "blake3-canonical-jsonl"  # the default
SHA256 = "sha256-canonical-jsonl"  # the first version: bare hex digests
ALGORITHMS = (ALGORITHM, SHA256)
_PREFIX = {ALGORITHM: "blake3:", SHA256: ""}
_GATHER = 1 << 16  # lines shorter than this are gathered first: BLAKE3 is slow on small updates


def algorithm_of(digest: str) -> str:
    """The version a digest was taken with: `blake3:<hex>`, or bare hex for the first (SHA-256)."""
    return ALGORITHM if digest.startswith(_PREFIX[ALGORITHM]) else SHA256


def short_digest(digest: str, width: int = 12) -> str:
    """The digest's first hex digits, for a message (its version's prefix left off)."""
    return digest.split(":", 1)[-1][:width]


@dataclass(kw_only=True)
class Fingerprint(PlainRecord):
    """The digest of one split and how many records went into it."""

    # The hash of the canonical JSONL of the records: 'blake3:<hex>' (BLAKE3), or bare hex (SHA-256,
    # the first version), as `algorithm` says.
    digest: str
    records: int  # number of records hashed
    file: str | None = None  # the file the records came from (a split of several files: its first)
    algorithm: str = ALGORITHM
    files: list[str] | None = None  # every file of a split of several, in the order hashed (left out for one)

    def model_dump(self, **how: Any) -> dict[str, Any]:
        """A one-file fingerprint is written as it always was: no `files` key."""
        data = super().model_dump(**how)
        if self.files is None:
            data.pop("files", None)
        return data


_LINE = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
# An extension built before canonical.c existed lacks it: orjson then serialises every record.
_from_line = getattr(compiled, "canonical_chat_line", None)


def canonical_bytes(record: dict[str, Any]) -> bytes:
    """One record as canonical JSON: sorted keys, compact separators, UTF-8, no newline."""
    try:
        return orjson.dumps(record, default=json_default, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        pass
    return _standard_library(record)


def canonical_line(record: dict[str, Any]) -> bytes:
    """`canonical_bytes(record)` and its newline, made in one piece: what the digest takes per record."""
    try:
        return orjson.dumps(record, default=json_default, option=_LINE)
    except TypeError:
        return _standard_library(record) + b"\n"


def record_line(record: dict[str, Any], raw: bytes | None) -> bytes:
    """`canonical_line(record)`; given `raw`, the JSONL line `record` was parsed from, a chat record
    whose strings are written as orjson writes them is copied from its line (tunegate/native/canonical.c,
    ~4x faster than re-serialising) and any other is serialised."""
    if raw is not None and _from_line is not None:
        line = _from_line(raw)
        if line is not None:
            return line
    return canonical_line(record)


def _standard_library(record: dict[str, Any]) -> bytes:
    """The canonical bytes of a record orjson refuses, from the standard library."""
    # orjson refuses lone surrogates and nesting past 254 levels, which a lenient reader may let
    # through; the standard library writes both, so the digest still covers them.
    try:
        text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # exact numbers (Decimal) past 254 levels, or ~990 levels
        raise UnreadableRecord("a record nests too deep to be fingerprinted") from None
    return text.encode("utf-8", "surrogatepass")


def json_default(value: Any) -> orjson.Fragment | str:
    """orjson's `default=` for records: a Decimal from the readers as its exact value, binary from a
    parquet column (not UTF-8) as its base64 text, as JSON carries binary."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return exact_number(value)


def exact_number(value: Any) -> orjson.Fragment:
    """A Decimal from the readers, written as its exact value."""
    if not isinstance(value, Decimal):
        raise TypeError(f"{type(value).__name__} is not JSON")
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):  # NaN or Infinity: JSON has neither, and no reader makes them
        raise TypeError("not a finite number")
    while len(digits) > 1 and digits[-1] == 0:
        digits, exponent = digits[:-1], exponent + 1
    text = "".join(map(str, digits))
    if exponent >= 0:  # an integer
        text = (text + "0" * exponent) if text != "0" else "0"
    else:
        text = f"{text[0]}.{text[1:] or '0'}e{exponent + len(text) - 1}"
    return orjson.Fragment(("-" if sign else "") + text)


def _sha256() -> Any:
    """The first version's hash. hashlib is imported only for it: importing hashlib starts OpenSSL
    (~2 ms, and ~3 MB of libcrypto resident in the gate's process) for every check otherwise."""
    import hashlib

    return hashlib.sha256()


class SplitDigest:
    """A running digest over one split's records, in `algorithm`'s version."""

    def __init__(self, algorithm: str = ALGORITHM) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown fingerprint algorithm {algorithm!r}: one of {', '.join(ALGORITHMS)}")
        self.algorithm = algorithm
        self._hash: Any = blake3.blake3() if algorithm == ALGORITHM else _sha256()
        self._held = bytearray()  # short lines, gathered for one update
        self.records = 0

    def add(self, record: dict[str, Any], raw: bytes | None = None) -> None:
        """Add one record; `raw`, the JSONL line it was parsed from, spares re-serialising a chat record."""
        self._take(record_line(record, raw))
        self.records += 1

    def add_part(self, span: tuple[Any, ...], numbers: array, own: Sequence[Any], buffer: bytearray) -> None:
        """Add a part's records as a worker saw them (tunegate.dataset.part_lines.hash_part)."""
        hash_part(self._take, span, numbers, own, buffer, canonical_line)
        self.records += len(numbers)

    def _take(self, data: Any) -> None:
        """Hash `data` after everything before it; a short piece waits in `_held` for more."""
        if len(data) >= _GATHER:
            self._settle()
            self._hash.update(data)
            return
        self._held += data
        if len(self._held) >= _GATHER:
            self._settle()

    def _settle(self) -> None:
        if self._held:
            self._hash.update(self._held)
            self._held.clear()

    def result(self, file: str | None = None, files: list[str] | None = None) -> Fingerprint:
        self._settle()
        return Fingerprint(digest=_PREFIX[self.algorithm] + self._hash.hexdigest(), records=self.records,
                           file=file, files=files, algorithm=self.algorithm)


class FingerprintObserver:
    """Digests every split during the dataset stage's single read of each file.

    On `finish(role)` the split's fingerprint is written into `sink[role]` as a plain dict, so it
    reaches the report even when a later stage does not run.
    """

    def __init__(self, sink: dict[str, Any], files: Mapping[str, Path | Sequence[Path]] | None = None):
        self.sink = sink
        self.files = {role: split_files(paths) for role, paths in (files or {}).items()}
        self._digests: dict[str, SplitDigest] = {}
        self._folder: str | None = None  # where workers leave their parts' canonical JSONL
        self._buffer = bytearray()  # a part's bytes, read again to copy its lines (tunegate.dataset.part_lines)

    def observe(self, role: str, line: int, index: int, record: dict[str, Any]) -> None:
        self.observe_line(role, line, index, record, None)

    def observe_line(self, role: str, line: int, index: int, record: dict[str, Any], raw: bytes | None) -> None:
        """`observe`, given the JSONL line the record was parsed from (None when there is none)."""
        digest = self._digests.get(role)
        if digest is None:
            digest = self._digests[role] = SplitDigest()
        digest.add(record, raw)

    def part(self, role: str) -> CanonicalPart:
        """What rides along one part of a file read in a worker (tunegate.dataset.segments)."""
        if self._folder is None:
            self._folder = handoff_folder(self)
        return CanonicalPart(self._folder)

    def join(self, role: str, payload: tuple[Any, ...], lines: int, records: int) -> None:
        """Hash a part's canonical records, parts in file order: the digest is one stream, so this
        process hashes it (BLAKE3 ~6 GB/s), each record's line copied from the file here or, where
        the worker made it, handed over (tunegate.dataset.part_lines)."""
        digest = self._digests.get(role)
        if digest is None:
            digest = self._digests[role] = SplitDigest()
        span, numbers, handed, lengths = payload
        with taken(handed) as data:
            view, own, at = memoryview(data), [], 0
            for size in lengths:
                own.append(view[at:at + size])
                at += size
            try:
                digest.add_part(span, numbers, own, self._buffer)
            finally:
                own.clear()
                view.release()  # before the map under it closes

    def finish(self, role: str) -> None:
        self._buffer = bytearray()  # a part's bytes: the largest part's room, not kept past the split
        digest = self._digests.pop(role, None) or SplitDigest()
        self.sink[role] = _result(digest, self.files.get(role) or []).model_dump()


class CanonicalPart:
    """What the parent's digest needs of one part's records (see FingerprintObserver.join): the line
    of each record whose canonical line its JSONL line makes (the parent copies it from the file),
    the canonical lines of the others."""

    def __init__(self, folder: str | None = None) -> None:
        self._numbers = array("q")  # per record: its line in the part, or -1 - k for the k-th of _own
        self._own: list[bytes] = []  # written out in one go (handoff.hand_over), never joined here
        self._folder = folder
        self._span: tuple[str, int, int, tuple[int, int, int] | None] | None = None

    def reads(self, path: str, start: int, end: int) -> None:
        """The bytes of the file this part is (told by the worker before its first record), and the
        file's stamp then: the parent reads them again only from the same file, unwritten."""
        try:
            stamp = stamp_of(path)
        except OSError:  # the worker's own read says what is wrong with the file
            stamp = None
        self._span = (path, start, end, stamp)

    def observe(self, role: str, line: int, index: int, record: dict[str, Any]) -> None:
        self.observe_line(role, line, index, record, None)

    def observe_line(self, role: str, line: int, index: int, record: dict[str, Any], raw: bytes | None) -> None:
        if raw is not None and from_file is not None and self._span is not None:
            self._numbers.append(line)
            return
        self._numbers.append(-1 - len(self._own))
        self._own.append(record_line(record, raw))

    def payload(self) -> tuple[Any, ...]:
        lengths = array("q", map(len, self._own))
        return self._span, self._numbers, hand_over(self._own, self._folder), lengths


def fingerprint_file(path: Path | Sequence[Path], algorithm: str = ALGORITHM) -> Fingerprint:
    """Stream a data file (JSONL, gzipped JSONL, a .json array, parquet, Arrow, CSV), or a split's files
    in order, and return its fingerprint (the dataset stage's for that split) in `algorithm`'s version.

    Raises UsageError when a file cannot be opened and UnreadableRecord at the first line that
    is not a JSON object: a digest of part of a split would silently stand for all of it.
    """
    digest = SplitDigest(algorithm)
    for _, _, record in iter_split(path, strict=True):
        digest.add(record)
    return _result(digest, split_files(path))


def _result(digest: SplitDigest, files: list[Path]) -> Fingerprint:
    """The digest named by its file, or by its first file and every file for a split of several."""
    first = shown(files[0]) if files else None
    return digest.result(first, [shown(p) for p in files] if len(files) > 1 else None)
