"""Stage 1, dataset: every data file read once, strictly, against the chat contract, with stats.

    from tunegate.dataset import validate_dataset
    result = validate_dataset({"train": Path("train.jsonl"), "validation": Path("val.jsonl")}, cap=20)

Each file is streamed once (constant memory apart from the exact-duplicate index, about 130 bytes
per record); later stages that need every record (overlap, fingerprints) plug in as
`RecordObserver`s (`tunegate.stage`) instead of reading the file again. Reading rules: `tunegate.dataset.jsonl_reader`;
the contract: `tunegate.dataset.contract`; codes and fixes: docs/checks.md, "Dataset (TG2xx)".
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tunegate.dataset.contract import BROKEN, CLEAN, ENDS_EARLY, Explainer, scan
from tunegate.dataset.fingerprint import FingerprintObserver
from tunegate.dataset.json_line import nesting, repeated_key_columns, repeated_keys
from tunegate.dataset.jsonl_reader import JsonlReader
from tunegate.dataset.records import exact_record
from tunegate.dataset.stats import FOLD_EVERY, SplitStats
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
    result = validate_dataset(ctx.files, cap=ctx.cap, observers=[prints, *ctx.observers])
    for role, stats in result.stats.items():
        ctx.facts.content[role] = SplitContent(records=stats["records"], content_chars=stats["content_chars"])
    return result


def validate_dataset(files: Mapping[str, Path], cap: int = 20,
                     observers: Sequence[RecordObserver] = ()) -> StageResult:
    """Check each file (role -> path, e.g. {"train": ..., "validation": ...}) and return the stage result.

    Never raises for any file content; every problem is a finding (at most `cap` kept per code,
    all counted). Stats are keyed by role.
    """
    start = time.perf_counter()
    if not files:
        return StageResult.skipped(STAGE, "no data files given")
    out = FindingCollector(STAGE, cap)
    stats = {role: _check_file(role, Path(path), out, observers) for role, path in files.items()}
    return out.result(time.perf_counter() - start, stats)


def _check_file(role: str, path: Path, out: FindingCollector,
                observers: Sequence[RecordObserver]) -> dict[str, Any]:
    reader = JsonlReader(path, out)
    check = RecordChecks(out, reader.file)
    observes = [o.observe for o in observers]
    for line, index, raw, record in reader.records():
        checked = check(line, index, raw, record)
        if checked is not None:
            for observe in observes:
                observe(role, line, index, checked)
    for observer in observers:
        observer.finish(role)
    return {"file": reader.file, "records": reader.records_seen, "blank_lines": reader.blank_lines,
            "lines": reader.lines, "gzip": reader.gzip, **check.summary()}


class RecordChecks:
    """Per-record checks of one file: the contract, repeated keys, repeated records, and stats."""

    def __init__(self, out: FindingCollector, file: str):
        self.out, self.file = out, file
        self.explainer = Explainer(out, file)
        self.stats = SplitStats()
        self.first_line: dict[int, int] = {}  # hash of a record's bytes -> the line it first appeared on
        self.duplicates = 0

    def __call__(self, line: int, index: int, raw: bytes, record: dict) -> dict | None:
        """Check one record; the record for observers (numbers exact), None when it is too deep."""
        msgs = record.get("messages")
        shape = self._scan(msgs) if type(msgs) is list else BROKEN
        # Only extra keys can nest or hold numbers (a message is role + content strings): look only then.
        if not shape or len(record) > 1 or sum(map(len, msgs)) != 2 * len(msgs):
            too_deep, floats = nesting(record, MAX_DEPTH)
            if too_deep:
                self._too_deep(line, index)
                return None
            if floats:  # orjson may have rounded a number the digest must see exactly
                record = exact_record(raw, record)
        if shape == ENDS_EARLY:
            self.explainer.last_turn(raw, msgs, line, index)
        elif shape != CLEAN:
            self.explainer.explain(raw, record, line, index)
        if shape:  # every message has a string role and content: >= 2n keys and 2n strings
            keys, strings = len(record) + 2 * len(msgs), 2 * len(msgs)
        else:
            keys, strings = _shallow_counts(record, msgs)
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
        return {"duplicates": self.duplicates, **self.stats.summary()}

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

    def _too_deep(self, line: int, index: int) -> None:
        self.out.add("TG224", "error", f"record nests more than {MAX_DEPTH} levels deep", "No chat record "
                     "nests that deep (a message is 3 levels); the line is corrupt or adversarial. Flatten "
                     "or drop it. It is not passed to later checks.", file=self.file, line=line, column=1,
                     record=index)

    def _duplicate_record(self, line: int, index: int, first: int) -> None:
        self.duplicates += 1
        if self.out.full("TG210"):
            self.out.count("TG210", "warning")
            return
        self.out.add("TG210", "warning", f"record is identical to the one on line {first}",
                     "Drop the repeat: duplicates weigh those examples double in training.",
                     file=self.file, line=line, column=1, record=index)


def _shallow_counts(record: dict, msgs: Any) -> tuple[int, int]:
    """Keys and string values of the record and its message objects (lower bounds of the totals)."""
    keys, strings = len(record), 0
    if type(msgs) is list:
        for m in msgs:
            if type(m) is dict:
                keys += len(m)
                strings += (type(m.get("role")) is str) + (type(m.get("content")) is str)
    return keys, strings
