"""A sweep's training data tokenised once: each candidate's trainer reads what an earlier one encoded.

    data = cached_splits(folder, spec, path, tokenizer, log)   # load_splits, or the copy kept in folder

Why: every candidate's trainer tokenised both splits whole (`load_splits`), the same records with
the same tokenizer, and the bare loop of issue 33 tokenises them once for all its candidates. It
grows with the data while the short training does not: on 2,550 records a candidate beyond the
first cost 2.9 CPU s, now 2.1 (`benchmarks/sweep_overhead.py --copies 30`, docs/benchmarks.md). The
mini-run's own audit (a sample, as tokens' counts) still runs in each candidate: it is the
candidate's gate.

What is kept: both splits' encoded records, the count left out and the lines `load_splits` logged
(train.log says KEPT_TOKENS, then the same lines), as JSON, under a key of everything the encoding
depends on: the files (each one's path as shown, size, times, inode), the spec's model section, the
prepared tokenizer (its class, chat template, special tokens, size, the files of its folder), the
spec's max_seq_len, loss_on, format and seed, and the code that reads and encodes (tunegate's, the
tokenizer libraries' and jinja2's versions, tunegate's sources as they are on disk). A file edited
between two candidates is read again; a kept copy that does not read back whole is ignored. The
folder is the sweep's own (tunegate.sweep.budget.tokens_folder, beside its candidates' files),
removed when its candidates are done, so the encoded copy of the data does not outlive the sweep;
it keeps the KEEP most recently used copies meanwhile (candidates of other max_seq_len, say).
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from tunegate.fullrun.data import TrainData, load_splits
from tunegate.processes.held_collections import collections_paused
from tunegate.spec.model import Spec
from tunegate.training.chat_tokens import EncodedChat
from tunegate.training.runtime import shown_path

# The log line of a training on data an earlier candidate encoded; the lines its encoding logged follow.
KEPT_TOKENS = "the data: as an earlier candidate of this sweep encoded it, read back"
KEEP = 2  # copies kept in a folder: a sweep's data, and one edit of it (a copy holds ~10 bytes a token)
_PACKAGE = Path(__file__).resolve().parent.parent  # tunegate's sources: the reading, formats and encoding code


def cached_splits(folder: Path, spec: Spec, path: str, tokenizer: Any, log: Callable[[str], None]) -> TrainData:
    """`load_splits(spec, tokenizer, log)`, read from `folder` when an earlier trainer kept the same."""
    key = splits_key(spec, path, tokenizer)
    kept = _read(folder / f"{key}.json")
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


def splits_key(spec: Spec, path: str, tokenizer: Any) -> str:
    """A digest of everything `load_splits` reads and depends on (see the module doc)."""
    from importlib.metadata import PackageNotFoundError, version

    import tunegate

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return ""

    t = spec.training
    parts = {
        "code": [tunegate.__version__, installed("transformers"), installed("tokenizers"), installed("jinja2"),
                 [[str(source), _stamp(source)] for source in sorted(_PACKAGE.rglob("*.py"))]],
        "files": {role: [[shown_path(p), str(p.absolute()), _stamp(p)] for p in spec.data.files(role)]
                  for role in ("train", "validation")},
        "model": [spec.model.model_dump_json(), str(path), _folder_stamps(Path(path))],
        "tokenizer": [type(tokenizer).__name__, tokenizer.chat_template, len(tokenizer),
                      [str(token) for token in tokenizer.all_special_tokens], tokenizer.pad_token_id,
                      tokenizer.eos_token_id, tokenizer.bos_token_id, getattr(tokenizer, "padding_side", None)],
        "training": [t.max_seq_len, t.loss_on, t.seed, spec.data.format],
    }
    return hashlib.sha256(orjson.dumps(parts, default=str)).hexdigest()[:32]


def _stamp(path: Path) -> list[int] | None:
    try:
        s = os.stat(path)
    except OSError:
        return None
    return [s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev]


def _folder_stamps(folder: Path) -> list[Any]:
    """Each top-level file of a local model folder (its tokenizer's files among them), stamped."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file())
    except OSError:  # not a folder: a hub id, whose files the tokenizer's own facts stand for
        return []
    return [[name, _stamp(folder / name)] for name in names]


def _write(folder: Path, key: str, data: TrainData, lines: list[str]) -> None:
    with collections_paused():  # rows are lists of ints, never a cycle
        body = {"key": key, "log": lines, "dropped": data.dropped,
                "train": [_row(c) for c in data.train], "validation": [_row(c) for c in data.validation]}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        aside = folder / f".{key}.{os.getpid()}"
        aside.write_bytes(orjson.dumps(body))
        os.replace(aside, folder / f"{key}.json")  # whole or not at all, for a candidate reading meanwhile
    except OSError:  # a folder that cannot hold it: the next candidate encodes again
        return
    _prune(folder)


def _read(path: Path) -> tuple[TrainData, list[str]] | None:
    try:
        with collections_paused():  # rows are lists of ints, never a cycle
            body = orjson.loads(path.read_bytes())
            data = TrainData([_chat(r) for r in body["train"]], [_chat(r) for r in body["validation"]],
                             int(body["dropped"]))
        lines = [str(line) for line in body["log"]]
        if body["key"] != path.stem:
            return None
        os.utime(path)  # recently used: the last the folder lets go
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return data, lines


def _row(chat: EncodedChat) -> list[Any]:
    return [chat.input_ids, chat.labels, chat.full_length, chat.final_reply_cut, chat.first_reply_token,
            list(chat.cut), list(chat.unplaced_replies)]


def _chat(row: Sequence[Any]) -> EncodedChat:
    ids, labels, full, cut_reply, first, cut, unplaced = row
    return EncodedChat(list(ids), list(labels), int(full), bool(cut_reply), first, tuple(cut), tuple(unplaced))


def _prune(folder: Path) -> None:
    """The KEEP most recently used copies stay; a write a kill left half-done goes after an hour."""
    try:
        entries = [(e.stat().st_mtime_ns, Path(e.path)) for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return
    copies = sorted((entry for entry in entries if not entry[1].name.startswith(".")), reverse=True)
    hour_ago = time.time_ns() - 3600 * 10**9
    stale = copies[KEEP:] + [entry for entry in entries if entry[1].name.startswith(".") and entry[0] < hour_ago]
    for _, path in stale:
        path.unlink(missing_ok=True)
