"""The per-record checks of one data file: the contract, repeated keys, repeated records, stats.

    check = RecordChecks(out, "train.jsonl", fmt="auto")
    seen = check(line, index, raw, record)   # the record as later stages see it, or None

The dataset stage (`tunegate.dataset.stage`) runs one per file, or one per part of a file read by
worker processes; the hot path is an OpenAI chat record (`contract.scan`), other formats are
checked in their own field names and handed on in chat form.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xxhash import xxh3_64_intdigest

from tunegate import formats
from tunegate.formats import other_types
from tunegate.dataset.contract import BROKEN, CLEAN, ENDS_EARLY, SHAPED, Explainer, scan
from tunegate.dataset import json_line
from tunegate.dataset.json_line import nesting, repeated_key_columns, repeated_keys
from tunegate.dataset.line_marks import (
    holds_double_brace,
    line_marks,
    may_hold_a_placeholder,
    may_hold_media,
    may_repeat_a_key,
)
from tunegate.dataset.records import exact_record
from tunegate.dataset.repeats import RepeatedRecords
from tunegate.dataset.stats import FOLD_EVERY, SplitStats
from tunegate.errors import NumberOutOfRange
from tunegate.report import FindingCollector

_BLANK = b" \t\r\n"
# Deepest nesting a record may have. A chat message sits 3 levels down; 64 leaves room for any
# metadata while staying far below what observers' tools handle (orjson.dumps stops at 254
# levels, recursive Python code near 1000).
MAX_DEPTH = 64


class RecordChecks:
    """Per-record checks of one file: the contract, repeated keys, repeated records, and stats.

    `repeats` sees each record's key (a hash of its bytes): a `RepeatedRecords`, or for a part of a
    file read elsewhere, a log the whole file's `RepeatedRecords` replays in order. `on_repeat` is
    told the index of every exact repeat reported here (TG210). `trains_all`: the spec's
    training.loss_on is `all`, so a conversation with every reply weighted 0 still trains (no TG265).
    """

    def __init__(self, out: FindingCollector, file: str, fmt: str = "auto",
                 on_repeat: Callable[[int], Any] | None = None, repeats: Any = None, trains_all: bool = False):
        self.out, self.file = out, file
        self.stats = SplitStats()
        self.explainer = Explainer(out, file, trains_all, self.stats)
        self.file_format = formats.FileFormat(fmt)
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
        if len(record) == 1 or not self._other_kind(raw, record, line, index):
            self._chat_contract(raw, record, msgs, shape, extra_keys, marks, line, index)
        if shape:  # every message has a string role and content: >= 2n keys and 2n strings
            keys, strings = len(record) + 2 * len(msgs), 2 * len(msgs)
        else:
            keys, strings = _shallow_counts(record, msgs)
        return self._common(line, index, raw, record, keys, strings, marks)

    def _chat_contract(self, raw: bytes, record: dict, msgs: Any, shape: int, extra_keys: bool, marks: Any,
                       line: int, index: int) -> None:
        """The contract on an OpenAI chat record: the full check only where the fast scan is not sure."""
        # Weights, tool calls, names, a `{{placeholder}}`, an `<image>`: the full check decides.
        if shape >= ENDS_EARLY and (extra_keys or may_hold_a_placeholder(raw, marks, len(msgs) + 1)
                                    or may_hold_media(raw, marks)):
            shape = SHAPED
        if shape == ENDS_EARLY:
            self.explainer.last_turn(raw, msgs, line, index)
        elif shape != CLEAN:
            self.explainer.explain(raw, record, line, index, "messages")

    def _other_kind(self, raw: bytes, record: dict, line: int, index: int) -> bool:
        """Whether the record, in a format tunegate reads, is another type of data (preference pairs, KTO
        feedback, media): then it is named for what it is (TG271, TG272), not checked as a conversation."""
        other = other_types.other_kind(record)
        if other is not None:
            self.explainer.report(other, raw, line, index)
        return other is not None

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
        if own is not None and self._other_kind(raw, record, line, index):
            return self._common(line, index, raw, record, keys, strings, marks)
        if own is None and fmt is not None and formats.shares_keys(record, fmt):
            self.explainer.explain(raw, record, line, index, fmt)  # its own format, a key missing
        elif own is None:
            self.explainer.no_format(raw, record, line, index, fmt)
        elif own != fmt:
            self.explainer.mixed(raw, line, index, own, fmt, self.file_format)
        elif (seen is record or shape != CLEAN or holds_double_brace(raw, marks) or may_hold_media(raw, marks)
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
            json_line.too_deep(MAX_DEPTH, self, line, index)
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
            json_line.out_of_range(exc, raw, self, line, index)
            return None

    def error(self, code: str, message: str, hint: str, line: int | None = None,
              column: int | None = None, record: int | None = None) -> None:
        """An error of this file (the `json_line.LineSink` the line findings are worded for)."""
        self.out.add(code, "error", message, hint, file=self.file, line=line, column=column, record=record)


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
