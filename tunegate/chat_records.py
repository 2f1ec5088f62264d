"""Read chat records (with their line numbers) for the mini-run, sampling when a file is large.

The dataset stage has already validated every line; this reader only needs the records that are
usable, and keeps each one's place so a finding can say `train.jsonl:17`. Lines that do not parse
or lack a `messages` list are skipped here (the dataset stage reports them).
"""
from __future__ import annotations

import gzip
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson


@dataclass(frozen=True)
class ChatRecord:
    """One conversation and where it came from."""

    line: int  # 1-based physical line in the file
    index: int  # 0-based index among the file's records
    messages: list[dict[str, Any]]

    def char_count(self) -> int:
        return sum(len(m["content"]) for m in self.messages)


@dataclass(frozen=True)
class RecordSample:
    """The records read from one file: all of them, or a uniform sample when the file is large."""

    records: list[ChatRecord]
    total: int  # usable records in the whole file
    sampled: bool


def read_records(path: Path, limit: int | None = None, seed: int = 0) -> RecordSample:
    """Read the usable records of a chat JSONL file, keeping a uniform sample of `limit` of them.

    Reservoir sampling keeps memory bounded by `limit` however large the file is, and the fixed
    seed makes the sample (and so the report) the same on every run.
    """
    rng = random.Random(seed)
    kept: list[ChatRecord] = []
    total = 0
    for record in _iter_records(path):
        total += 1
        if limit is None or len(kept) < limit:
            kept.append(record)
            continue
        slot = rng.randrange(total)
        if slot < limit:
            kept[slot] = record
    kept.sort(key=lambda r: r.index)
    return RecordSample(kept, total, sampled=limit is not None and total > limit)


def _iter_records(path: Path) -> Iterator[ChatRecord]:
    opener = gzip.open if path.suffix == ".gz" else open
    index = 0
    with opener(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            messages = _messages(obj)
            if messages is not None:
                yield ChatRecord(line_no, index, messages)
            index += 1


def _messages(obj: Any) -> list[dict[str, Any]] | None:
    """The record's messages with string roles and string content, or None if it has none."""
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return None
    messages = []
    for msg in obj["messages"]:
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            return None
        messages.append({**msg, "content": _text(msg.get("content"))})
    return messages or None


def _text(content: Any) -> str:
    """Content as one string; OpenAI-style lists of parts are joined, as templates expect text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
