"""Stage 1, dataset: every data file read once, strictly, against the chat contract, with stats.

    from tunegate.dataset import validate_dataset
    result = validate_dataset({"train": Path("train.jsonl"), "validation": Path("val.jsonl")}, cap=20)
    result = validate_dataset({"train": Path("train.json")}, fmt="sharegpt")   # any format, any container

Records in any format (`tunegate.formats`: OpenAI chat, ShareGPT, Alpaca, TRL prompt-completion;
`auto` fixes each file's format from its first record) are checked against that format's contract
and handed to observers in chat form, the form every later stage reads.

Each file is streamed once (constant memory apart from the exact-duplicate index, about 130 bytes
per record); later stages that need every record (overlap, fingerprints) plug in as
`RecordObserver`s (`tunegate.stage`) instead of reading the file again. Reading rules: `tunegate.dataset.jsonl_reader`;
the contract: `tunegate.dataset.contract`; codes and fixes: docs/checks.md, "Dataset (TG2xx)".
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from xxhash import xxh3_64_intdigest

from tunegate import formats, progress
from tunegate.dataset.contract import BROKEN, CLEAN, ENDS_EARLY, SHAPED, Explainer, scan
from tunegate.dataset.fingerprint import FingerprintObserver
from tunegate.dataset.json_line import nesting, repeated_key_columns, repeated_keys
from tunegate.dataset.jsonl_reader import JsonlReader
from tunegate.dataset.line_marks import holds_double_brace, line_marks, may_hold_a_placeholder, may_repeat_a_key
from tunegate.dataset.parallel import Workers, worker_count
from tunegate.dataset.records import exact_record
from tunegate.dataset.segments import KeyLog, Part, PartReader, PartResult, RepeatedRecords, cut, shifted, splittable
from tunegate.dataset.stats import FOLD_EVERY, SplitStats
from tunegate.errors import NumberOutOfRange
from tunegate.facts import SplitContent
from tunegate.report import FindingCollector, StageResult
from tunegate.stage import GateContext, RecordObserver

STAGE = "dataset"
_BLANK = b" \t\r\n"
# Deepest nesting a record may have. A chat message sits 3 levels down; 64 leaves room for any
# metadata while staying far below what observers' tools handle (orjson.dumps stops at 254
# levels, recursive Python code near 1000).
MAX_DEPTH = 64
PART_BYTES = 8 << 20  # the largest part per worker task: amortises a task, keeps the results waiting small
# Smallest file read in parts: forking a worker costs ~20 ms, so from 8 MB (~0.1 s of work) it pays;
# where workers must be spawned (the process runs threads, or not on Linux) each one imports for
# ~0.5 s, so only from 64 MB.
SPLIT_FORKED, SPLIT_SPAWNED = 8 << 20, 64 << 20
MIN_PART = 1 << 20  # below this a task's overhead shows



def run_stage(ctx: GateContext) -> StageResult:
    """Stage 1 in the gate: every file read once, its fingerprint and content counts into the context."""
    prints = FingerprintObserver(ctx.fingerprints, ctx.files)
    fmt = ctx.spec.data.format if ctx.spec is not None else ctx.data_format
    result = validate_dataset(ctx.files, cap=ctx.cap, observers=[prints, *ctx.observers], fmt=fmt)
    for role in [r for r in ctx.files if r in ctx.fingerprints]:  # the files' order, whatever was read first
        ctx.fingerprints[role] = ctx.fingerprints.pop(role)
    for role, stats in result.stats.items():
        ctx.facts.content[role] = SplitContent(records=stats["records"], content_chars=stats["content_chars"])
    return result


def validate_dataset(files: Mapping[str, Path], cap: int = 20, observers: Sequence[RecordObserver] = (),
                     fmt: str = "auto", workers: int | None = None, part_bytes: int | None = None) -> StageResult:
    """Check each file (role -> path, e.g. {"train": ..., "validation": ...}) and return the stage result.

    Never raises for any file content; every problem is a finding (at most `cap` kept per code,
    all counted). Stats are keyed by role. `fmt` is the records' format, or "auto". A large plain
    JSONL file is read in parts by `workers` processes (default: tunegate.dataset.parallel's count)
    when every observer can ride along in parts; the result is the same as one read. `part_bytes`
    fixes the part size (and reads in parts every file of at least 4 parts); by default parts are a
    quarter of a file's share per worker, 1-8 MiB.
    """
    start = time.perf_counter()
    if not files:
        return StageResult.skipped(STAGE, "no data files given")
    first = {getattr(o, "read_first", None) for o in observers}
    order = sorted(files, key=lambda role: role not in first)  # stable: the files' order otherwise
    found = {role: FindingCollector(STAGE, cap) for role in order}
    with Workers(worker_count() if workers is None else workers) as pool:
        checked = {role: _check_file(role, Path(files[role]), found[role], observers, fmt, pool, part_bytes)
                   for role in order}
    out = FindingCollector(STAGE, cap)
    for role in files:  # reported in the files' order, as if read in it
        out.absorb(found[role])
    return out.result(time.perf_counter() - start, {role: checked[role] for role in files})


def _check_file(role: str, path: Path, out: FindingCollector, observers: Sequence[RecordObserver], fmt: str,
                pool: Workers, part_bytes: int | None) -> dict[str, Any]:
    size = _size(path)
    least = 4 * part_bytes if part_bytes else (SPLIT_FORKED if pool.forks else SPLIT_SPAWNED)
    file_format = splittable(path, observers, fmt) if pool.count > 1 and size >= least else None
    if file_format is not None:
        part = part_bytes or max(MIN_PART, min(PART_BYTES, size // (4 * pool.count)))
        stats = _check_in_parts(role, path, out, observers, pool, part, file_format)
        for observer in observers:
            observer.finish(role)
        return stats
    reader = JsonlReader(path, out)
    check = RecordChecks(out, reader.file, fmt, _repeat_hook(role, observers))
    observes = [o.observe for o in observers]
    with progress.step(f"reading {path.name}", total=size or None, unit="bytes", poll=reader.bytes_read):
        for line, index, raw, record in reader.records():
            seen = check(line, index, raw, record)
            if seen is not None:
                for observe in observes:
                    observe(role, line, index, seen)
    for observer in observers:
        observer.finish(role)
    return {"file": reader.file, "records": reader.records_seen, "blank_lines": reader.blank_lines,
            "lines": reader.lines, "gzip": reader.gzip, "container": reader.container, **check.summary()}


def _repeat_hook(role: str, observers: Sequence[Any]) -> Callable[[int], Any]:
    """Tells every observer with `exact_repeat` the line of each exact repeat reported (TG210)."""
    hooks = [o.exact_repeat for o in observers if hasattr(o, "exact_repeat")]
    return lambda line: [hook(role, line) for hook in hooks]


class RecordChecks:
    """Per-record checks of one file: the contract, repeated keys, repeated records, and stats.

    `repeats` sees each record's key (a hash of its bytes): a `RepeatedRecords`, or for a part of a
    file read elsewhere, a log the whole file's `RepeatedRecords` replays in order. `on_repeat` is
    told the line of every exact repeat reported here (TG210).
    """

    def __init__(self, out: FindingCollector, file: str, fmt: str = "auto",
                 on_repeat: Callable[[int], Any] | None = None, repeats: Any = None):
        self.out, self.file = out, file
        self.explainer = Explainer(out, file)
        self.file_format = formats.FileFormat(fmt)
        self.stats = SplitStats()
        self.repeats = repeats if repeats is not None else RepeatedRecords(out, file, on_repeat)

    def __call__(self, line: int, index: int, raw: bytes, record: dict) -> dict | None:
        """Check one record; the record as later stages see it (numbers exact), None when it is too deep."""
        if self.file_format.format != "messages" or "messages" not in record:  # the hot path skips this
            fmt, own = self.file_format.of(record, line)
            if fmt != "messages" or own != "messages":
                return self._other_format(line, index, raw, record, fmt, own)
        msgs = record.get("messages")
        marks = line_marks(raw)
        shape = self._scan(msgs) if type(msgs) is list else BROKEN
        extra_keys = bool(shape) and sum(map(len, msgs)) != 2 * len(msgs)
        # Only extra keys can nest or hold numbers (a message is role + content strings): look only then.
        if not shape or len(record) > 1 or extra_keys:
            record = self._handed_on(raw, record, line, index, *nesting(record, MAX_DEPTH))
            if record is None:
                return None
        # Weights, tool calls, names, a `{{placeholder}}`: the full check decides.
        if shape >= ENDS_EARLY and (extra_keys or may_hold_a_placeholder(raw, marks, len(msgs) + 1)):
            shape = SHAPED
        if shape == ENDS_EARLY:
            self.explainer.last_turn(raw, msgs, line, index)
        elif shape != CLEAN:
            self.explainer.explain(raw, record, line, index, "messages")
        if shape:  # every message has a string role and content: >= 2n keys and 2n strings
            keys, strings = len(record) + 2 * len(msgs), 2 * len(msgs)
        else:
            keys, strings = _shallow_counts(record, msgs)
        return self._common(line, index, raw, record, keys, strings, marks)

    def _other_format(self, line: int, index: int, raw: bytes, record: dict, fmt: str | None,
                      own: str | None) -> dict | None:
        """A record the messages fast path does not cover: another format, a mix, or none."""
        keys, strings, deep, floats = _shape(record)
        record = self._handed_on(raw, record, line, index, deep, floats)
        if record is None:
            return None
        seen = formats.canonical(record, fmt, own)
        msgs = seen.get("messages")
        marks = line_marks(raw)
        shape = self._scan(msgs) if type(msgs) is list else BROKEN
        if own is None and fmt is not None and formats.shares_keys(record, fmt):
            self.explainer.explain(raw, record, line, index, fmt)  # its own format, a key missing
        elif own is None:
            self.explainer.no_format(raw, record, line, index, fmt)
        elif own != fmt:
            self.explainer.mixed(raw, line, index, own, fmt, self.file_format)
        elif (seen is record or shape != CLEAN or holds_double_brace(raw, marks)
              or sum(map(len, msgs)) != 2 * len(msgs) + formats.added_keys(record, fmt)):
            # The chat form is not surely clean: the format's own check says what, in its own fields.
            # (A clean chat form means the record meets its format's contract: the conversions
            # refuse any record they cannot map, and keep every extra key for the check above.)
            self.explainer.explain(raw, record, line, index, fmt)
        return self._common(line, index, raw, seen, keys, strings, marks)

    def _handed_on(self, raw: bytes, record: dict, line: int, index: int, too_deep: bool,
                   floats: bool) -> dict | None:
        """The record later stages may see: None when it nests too deep (reported), else read again
        with exact numbers when orjson may have rounded one the digest must see exactly."""
        if too_deep:
            self._too_deep(line, index)
            return None
        return self._exact(raw, record, line, index) if floats else record

    def _common(self, line: int, index: int, raw: bytes, record: dict, keys: int, strings: int,
                marks: Any = None) -> dict:
        """The checks of every record, whatever its format: repeated keys and records, stats folding."""
        if may_repeat_a_key(raw, marks, keys, strings):
            self._duplicate_keys(raw, line, index)
        # Exact duplicates: the same bytes once surrounding whitespace and the line ending go. XXH3,
        # not hash(): every process must give a record the same key.
        key = raw if raw[0] == 123 and raw.endswith(b"}\n") else raw.strip(_BLANK) + b"\n"
        self.repeats.see(xxh3_64_intdigest(key), line, index)
        if not index % FOLD_EVERY:
            self.stats.fold()
        return record

    def _scan(self, msgs: list) -> int:
        self.stats.turns.append(len(msgs))
        return scan(msgs, self.stats.lengths)

    def summary(self) -> dict[str, Any]:
        return {"duplicates": self.repeats.duplicates, "format": self.file_format.format, **self.stats.summary()}

    def _duplicate_keys(self, raw: bytes, line: int, index: int) -> None:
        names = repeated_keys(raw)
        if not names:
            return
        # Columns need a slow walk over the text: only for findings that will be shown.
        located = repeated_key_columns(raw) if self.out.totals["TG226"] < self.out.cap else []
        for key, column in located or [(name, 1) for name in names]:
            self.out.add("TG226", "error", f"key {key!r} appears twice in one object; parsers silently "
                         "keep only the last value (some keep the first)", "Delete or rename one of the two keys.",
                         file=self.file, line=line, column=column, record=index)

    def _exact(self, raw: bytes, record: dict, line: int, index: int) -> dict | None:
        """The record with exact numbers, or None (TG223) when one is past any range."""
        try:
            return exact_record(raw, record)
        except NumberOutOfRange as exc:
            at = raw.find(exc.text.encode("ascii"))
            self.out.add("TG223", "error", f"{exc}: every reader takes it for 0.0 or infinity, so an edit "
                         "to it would go unseen", "Write the number with an exponent of at most 18 digits "
                         "(e.g. 0 or 1e-300), or as a string. It is not passed to later checks.", file=self.file,
                         line=line, column=len(raw[:max(at, 0)].decode("utf-8", "replace")) + 1, record=index)
            return None

    def _too_deep(self, line: int, index: int) -> None:
        self.out.add("TG224", "error", f"record nests more than {MAX_DEPTH} levels deep", "No chat record "
                     "nests that deep (a message is 3 levels); the line is corrupt or adversarial. Flatten "
                     "or drop it. It is not passed to later checks.", file=self.file, line=line, column=1,
                     record=index)


def _shape(record: dict) -> tuple[int, int, bool, bool]:
    """Keys and string values anywhere in a record (exact, so the repeated-key test stays cheap),
    whether it nests deeper than MAX_DEPTH and whether it holds a float; one walk for all four."""
    keys = strings = 0
    floats = False
    stack = [(record, 1)]
    push = stack.append
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return keys, strings, True, floats
        if type(item) is dict:
            keys += len(item)
            item = item.values()
        for v in item:
            kind = type(v)
            if kind is str:
                strings += 1
            elif kind is dict or kind is list:
                push((v, depth + 1))
            elif kind is float:
                floats = True
    return keys, strings, False, floats


def _shallow_counts(record: dict, msgs: Any) -> tuple[int, int]:
    """Keys and string values of the record and its message objects (lower bounds of the totals)."""
    keys, strings = len(record), 0
    if type(msgs) is list:
        for m in msgs:
            if type(m) is dict:
                keys += len(m)
                strings += (type(m.get("role")) is str) + (type(m.get("content")) is str)
    return keys, strings


# -- one file in parts, each read in a worker process, merged in file order ---------------------


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def read_part(part: Part) -> PartResult:
    """Read and check one byte range of a file (the work of one worker process)."""
    out = FindingCollector(STAGE, part.cap)
    reader = PartReader(Path(part.path), out, part.start, part.end)
    log = KeyLog()
    check = RecordChecks(out, reader.file, repeats=log)
    check.file_format = part.file_format  # fixed by the file's first record, as in one read
    observes = [o.observe for o in part.observers]
    for line, index, raw, record in reader.records():
        seen = check(line, index, raw, record)
        if seen is not None:
            for observe in observes:
                observe(part.role, line, index, seen)
    check.stats.fold()
    return PartResult(out, check.stats, log, reader.lines, reader.records_seen, reader.blank_lines,
                      reader.failure, [o.payload() for o in part.observers])


def _check_in_parts(role: str, path: Path, out: FindingCollector, observers: Sequence[Any], pool: Workers,
                    part_bytes: int, file_format: formats.FileFormat) -> dict[str, Any]:
    templates = [o.part(role) for o in observers]
    spans = cut(path, part_bytes)
    parts = (Part(role, str(path), a, b, out.cap, templates, file_format) for a, b in spans)
    stats, repeats = SplitStats(), RepeatedRecords(out, str(path), _repeat_hook(role, observers))
    lines = records = blank = 0
    shown = progress.step(f"reading {path.name} in {len(spans)} parts", total=spans[-1][1] if spans else None,
                          unit="bytes")
    with shown:
        for (_, end), got in zip(spans, pool.in_order(read_part, parts)):
            shown.update(done=end)  # parts merge in file order: everything before `end` is read
            out.absorb(shifted(got, repeats, lines, records))
            stats.absorb(got.stats)
            for observer, payload in zip(observers, got.payloads):
                observer.join(role, payload, lines, records)
            if got.failure is not None:  # reading stopped there, as one read would have
                JsonlReader(path, out).read_failed(lines + got.failure[0], got.failure[1])  # type: ignore[arg-type]
            lines, records, blank = lines + got.lines, records + got.records, blank + got.blank_lines
            if got.failure is not None:
                break
    if not records:  # the file-level findings one read makes at its end (TG241, TG242)
        whole = JsonlReader(path, out)
        whole.lines = lines
        whole._report_emptiness()
    return {"file": str(path), "records": records, "blank_lines": blank, "lines": lines, "gzip": False,
            "container": "jsonl", "duplicates": repeats.duplicates, "format": file_format.format,
            **stats.summary()}
