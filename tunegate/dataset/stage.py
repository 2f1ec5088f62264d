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

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tunegate import formats
from tunegate.dataset.contract import BROKEN, CLEAN, ENDS_EARLY, SHAPED, Explainer, scan
from tunegate.dataset.fingerprint import FingerprintObserver
from tunegate.dataset.json_line import nesting, repeated_key_columns, repeated_keys
from tunegate.dataset.jsonl_reader import JsonlReader
from tunegate.dataset.records import exact_record
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



def run_stage(ctx: GateContext) -> StageResult:
    """Stage 1 in the gate: every file read once, its fingerprint and content counts into the context."""
    prints = FingerprintObserver(ctx.fingerprints, ctx.files)
    fmt = ctx.spec.data.format if ctx.spec is not None else ctx.data_format
    result = validate_dataset(ctx.files, cap=ctx.cap, observers=[prints, *ctx.observers], fmt=fmt)
    for role, stats in result.stats.items():
        ctx.facts.content[role] = SplitContent(records=stats["records"], content_chars=stats["content_chars"])
    return result


def validate_dataset(files: Mapping[str, Path], cap: int = 20,
                     observers: Sequence[RecordObserver] = (), fmt: str = "auto") -> StageResult:
    """Check each file (role -> path, e.g. {"train": ..., "validation": ...}) and return the stage result.

    Never raises for any file content; every problem is a finding (at most `cap` kept per code,
    all counted). Stats are keyed by role. `fmt` is the records' format, or "auto".
    """
    start = time.perf_counter()
    if not files:
        return StageResult.skipped(STAGE, "no data files given")
    out = FindingCollector(STAGE, cap)
    stats = {role: _check_file(role, Path(path), out, observers, fmt) for role, path in files.items()}
    return out.result(time.perf_counter() - start, stats)


def _check_file(role: str, path: Path, out: FindingCollector,
                observers: Sequence[RecordObserver], fmt: str) -> dict[str, Any]:
    reader = JsonlReader(path, out)
    repeat_hooks = [getattr(o, "exact_repeat") for o in observers if hasattr(o, "exact_repeat")]
    check = RecordChecks(out, reader.file, fmt, lambda line: [hook(role, line) for hook in repeat_hooks])
    observes = [o.observe for o in observers]
    for line, index, raw, record in reader.records():
        seen = check(line, index, raw, record)
        if seen is not None:
            for observe in observes:
                observe(role, line, index, seen)
    for observer in observers:
        observer.finish(role)
    return {"file": reader.file, "records": reader.records_seen, "blank_lines": reader.blank_lines,
            "lines": reader.lines, "gzip": reader.gzip, "container": reader.container, **check.summary()}


class RecordChecks:
    """Per-record checks of one file: the contract, repeated keys, repeated records, and stats."""

    def __init__(self, out: FindingCollector, file: str, fmt: str = "auto",
                 on_repeat: Callable[[int], Any] | None = None):
        self.out, self.file = out, file
        self.on_repeat = on_repeat  # told the line of every exact repeat reported here (TG210)
        self.explainer = Explainer(out, file)
        self.file_format = formats.FileFormat(fmt)
        self.stats = SplitStats()
        self.first_line: dict[int, int] = {}  # hash of a record's bytes -> the line it first appeared on
        self.duplicates = 0

    def __call__(self, line: int, index: int, raw: bytes, record: dict) -> dict | None:
        """Check one record; the record as later stages see it (numbers exact), None when it is too deep."""
        if self.file_format.format != "messages" or "messages" not in record:  # the hot path skips this
            fmt, own = self.file_format.of(record, line)
            if fmt != "messages" or own != "messages":
                return self._other_format(line, index, raw, record, fmt, own)
        msgs = record.get("messages")
        shape = self._scan(msgs) if type(msgs) is list else BROKEN
        extra_keys = bool(shape) and sum(map(len, msgs)) != 2 * len(msgs)
        # Only extra keys can nest or hold numbers (a message is role + content strings): look only then.
        if not shape or len(record) > 1 or extra_keys:
            too_deep, floats = nesting(record, MAX_DEPTH)
            if too_deep:
                self._too_deep(line, index)
                return None
            if floats:  # orjson may have rounded a number the digest must see exactly
                record = self._exact(raw, record, line, index)
                if record is None:
                    return None
        # Weights, tool calls, names, a `{{placeholder}}`: the full check decides. A line holds one
        # '{' per object (a byte count, ~3x cheaper than searching for "{{"), so only a line with
        # braces in its text is searched.
        if shape >= ENDS_EARLY and (extra_keys or (raw.count(b"{") > len(msgs) + 1 and b"{{" in raw)):
            shape = SHAPED
        if shape == ENDS_EARLY:
            self.explainer.last_turn(raw, msgs, line, index)
        elif shape != CLEAN:
            self.explainer.explain(raw, record, line, index, "messages")
        if shape:  # every message has a string role and content: >= 2n keys and 2n strings
            keys, strings = len(record) + 2 * len(msgs), 2 * len(msgs)
        else:
            keys, strings = _shallow_counts(record, msgs)
        return self._common(line, index, raw, record, keys, strings)

    def _other_format(self, line: int, index: int, raw: bytes, record: dict, fmt: str | None,
                      own: str | None) -> dict | None:
        """A record the messages fast path does not cover: another format, a mix, or none."""
        keys, strings, deep, floats = _shape(record)
        if deep:
            self._too_deep(line, index)
            return None
        if floats:  # orjson may have rounded a number the digest must see exactly
            record = self._exact(raw, record, line, index)
            if record is None:
                return None
        seen = formats.canonical(record, fmt, own)
        msgs = seen.get("messages")
        shape = self._scan(msgs) if type(msgs) is list else BROKEN
        if own is None and fmt is not None and formats.shares_keys(record, fmt):
            self.explainer.explain(raw, record, line, index, fmt)  # its own format, a key missing
        elif own is None:
            self.explainer.no_format(raw, record, line, index, fmt)
        elif own != fmt:
            self.explainer.mixed(raw, line, index, own, fmt, self.file_format)
        elif (seen is record or shape != CLEAN or b"{{" in raw
              or sum(map(len, msgs)) != 2 * len(msgs) + formats.added_keys(record, fmt)):
            # The chat form is not surely clean: the format's own check says what, in its own fields.
            # (A clean chat form means the record meets its format's contract: the conversions
            # refuse any record they cannot map, and keep every extra key for the check above.)
            self.explainer.explain(raw, record, line, index, fmt)
        return self._common(line, index, raw, seen, keys, strings)

    def _common(self, line: int, index: int, raw: bytes, record: dict, keys: int, strings: int) -> dict:
        """The checks of every record, whatever its format: repeated keys and records, stats folding."""
        # A repeated key vanishes in parsing, so the text holds more strings than the record: at
        # most 2 * (keys + strings) quotes proves there is none (one fast byte count). Else '":'
        # counts the keys as writers emit them, and only a mismatch costs the exact look.
        if raw.count(b'"') > 2 * (keys + strings) and raw.count(b'":') != keys:
            self._duplicate_keys(raw, line, index)
        # Exact duplicates: the same bytes once surrounding whitespace and the line ending go.
        key = raw if raw[0] == 123 and raw.endswith(b"}\n") else raw.strip(_BLANK) + b"\n"
        first = self.first_line.setdefault(hash(key), line)
        if first != line:
            self._duplicate_record(line, index, first)
        if not index % FOLD_EVERY:
            self.stats.fold()
        return record

    def _scan(self, msgs: list) -> int:
        self.stats.turns.append(len(msgs))
        return scan(msgs, self.stats.lengths)

    def summary(self) -> dict[str, Any]:
        return {"duplicates": self.duplicates, "format": self.file_format.format, **self.stats.summary()}

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

    def _duplicate_record(self, line: int, index: int, first: int) -> None:
        self.duplicates += 1
        if self.on_repeat is not None:
            self.on_repeat(line)
        if self.out.full("TG210"):
            self.out.count("TG210", "warning")
            return
        self.out.add("TG210", "warning", f"record is identical to the one on line {first}",
                     "Drop the repeat: duplicates weigh those examples double in training.",
                     file=self.file, line=line, column=1, record=index)


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
