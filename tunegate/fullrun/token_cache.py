"""A sweep's training data tokenised once: each candidate's trainer reads what an earlier one encoded.

    data = cached_splits(folder, spec, path, tokenizer, log)   # load_splits, or the copy kept in folder

Why: every candidate's trainer tokenised both splits whole (`load_splits`), the same records with
the same tokenizer, and the bare loop of issue 33 tokenises them once for all its candidates. It
grows with the data while the short training does not: on 2,550 records a candidate beyond the
first cost 2.9 CPU s, now 2.1 (`benchmarks/sweep_overhead.py --copies 30`, docs/benchmarks.md). The
mini-run's token audit is kept beside it the same way (tunegate.minirun.audit_cache).

What is kept: both splits' encoded records, the count left out and the lines `load_splits` logged
(train.log says KEPT_TOKENS, then the same lines), as JSON, under a key of everything the encoding
depends on (`tunegate.training.data_key`). A file edited between two candidates is read again; a
kept copy that does not read back whole is ignored. The folder is the sweep's own
(tunegate.sweep.budget.tokens_folder, beside its candidates' files), removed when its candidates are
done, so the encoded copy of the data does not outlive the sweep; it keeps the KEEP most recently
used copies meanwhile (candidates of other max_seq_len, say; `tunegate.training.kept_copies`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from tunegate.fullrun.data import TrainData, load_splits
from tunegate.processes.held_collections import collections_paused
from tunegate.spec.model import Spec
from tunegate.training.chat_tokens import EncodedChat
from tunegate.training.data_key import encoding_key
from tunegate.training.kept_copies import keep_whole, recently_used

# The log line of a training on data an earlier candidate encoded; the lines its encoding logged follow.
KEPT_TOKENS = "the data: as an earlier candidate of this sweep encoded it, read back"
KEEP = 2  # copies kept in a folder: a sweep's data, and one edit of it (a copy holds ~10 bytes a token)


def cached_splits(folder: Path, spec: Spec, path: str, tokenizer: Any, log: Callable[[str], None]) -> TrainData:
    """`load_splits(spec, tokenizer, log)`, read from `folder` when an earlier trainer kept the same."""
    key = encoding_key(spec, path, tokenizer)
    kept = _read(recently_used(folder, key))
    if kept is not None:
        data, lines = kept
        log(KEPT_TOKENS)
        for line in lines:
            log(line)
        return data
    lines: list[str] = []

    def both(line: str) -> None:
        lines.append(line)
        log(line)

    data = load_splits(spec, tokenizer, both)
    _write(folder, key, data, lines)
    return data


def _write(folder: Path, key: str, data: TrainData, lines: list[str]) -> None:
    with collections_paused():  # rows are lists of ints, never a cycle
        body = {"key": key, "log": lines, "dropped": data.dropped,
                "train": [_row(c) for c in data.train], "validation": [_row(c) for c in data.validation]}
    keep_whole(folder, key, orjson.dumps(body), most=KEEP)


def _read(path: Path) -> tuple[TrainData, list[str]] | None:
    try:
        with collections_paused():  # rows are lists of ints, never a cycle
            body = orjson.loads(path.read_bytes())
            data = TrainData([_chat(r) for r in body["train"]], [_chat(r) for r in body["validation"]],
                             int(body["dropped"]))
        lines = [str(line) for line in body["log"]]
        if body["key"] != path.stem:
            return None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return data, lines


def _row(chat: EncodedChat) -> list[Any]:
    return [chat.input_ids, chat.labels, chat.full_length, chat.final_reply_cut, chat.first_reply_token,
            list(chat.cut), list(chat.unplaced_replies)]


def _chat(row: Sequence[Any]) -> EncodedChat:
    ids, labels, full, cut_reply, first, cut, unplaced = row
    return EncodedChat(list(ids), list(labels), int(full), bool(cut_reply), first, tuple(cut), tuple(unplaced))
