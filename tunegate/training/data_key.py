"""The key of a split's encoding: everything tokenising the spec's data depends on, as one digest.

    key = encoding_key(spec, path, tokenizer)                  # a sweep's trainers' encoded splits
    key = encoding_key(spec, path, tokenizer, {"audit": ...})  # its mini-runs' token audit

Two candidates of a sweep with equal keys encode (and audit) their data to the same tokens, so what
one did the next may read back (tunegate.fullrun.token_cache, tunegate.minirun.audit_cache). The key
holds: the data files (each one's path as shown, size, times, inode), the spec's model section, the
prepared tokenizer (its class, chat template, special tokens, size, the files of its folder), the
spec's max_seq_len, loss_on, format and seed, and the code that reads and encodes (the installed
versions of tunegate, the tokenizer libraries and jinja2; tunegate's sources as they are on disk).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from tunegate.spec.model import Spec
from tunegate.training.runtime import shown_path

_PACKAGE = Path(__file__).resolve().parent.parent  # tunegate's sources: the reading, formats and encoding code


def encoding_key(spec: Spec, path: str, tokenizer: Any, extra: dict[str, Any] | None = None) -> str:
    """A digest of everything encoding the spec's splits reads and depends on (see the module doc),
    and of `extra` (what else the kept result depends on)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return ""

    t = spec.training
    parts = {
        "code": [installed("tunegate"), installed("transformers"), installed("tokenizers"), installed("jinja2"),
                 [[str(source), stamp(source)] for source in sorted(_PACKAGE.rglob("*.py"))]],
        "files": {role: [[shown_path(p), str(p.absolute()), stamp(p)] for p in spec.data.files(role)]
                  for role in ("train", "validation")},
        "model": [spec.model.model_dump_json(), str(path), _folder_stamps(Path(path))],
        "tokenizer": [type(tokenizer).__name__, tokenizer.chat_template, len(tokenizer),
                      [str(token) for token in tokenizer.all_special_tokens], tokenizer.pad_token_id,
                      tokenizer.eos_token_id, tokenizer.bos_token_id, getattr(tokenizer, "padding_side", None)],
        "training": [t.max_seq_len, t.loss_on, t.seed, spec.data.format],
        **({"extra": extra} if extra else {}),
    }
    return hashlib.sha256(orjson.dumps(parts, default=str)).hexdigest()[:32]


def stamp(path: Path) -> list[int] | None:
    """What changes when a file is edited or replaced: size, times, inode, device."""
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
    return [[name, stamp(folder / name)] for name in names]
