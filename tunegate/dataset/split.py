"""A split read as one stream: its files in order, each record keeping its own file and line.

    for line, key, record in iter_split(files, fmt="auto"):   # every record of every file, in order
        number, index = file_number(key), index_in_file(key)  # which file, which record of it

data.train and data.validation are one file or several (a mixture of datasets, a dataset's
shards, `tunegate.spec.model.split_files`), read as axolotl, TRL, LLaMA-Factory and
`load_dataset` read them: concatenated, in order. Across a split a record is named by one
integer, its key: its index in its own file, plus the file's number shifted past any index. The
first file's keys are its indexes, so a split of one file is seen (hashed, matched, reported)
exactly as before; places in findings are always the record's own file, line and index.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tunegate.dataset.records import iter_canonical
from tunegate.pathguard import shown
from tunegate.spec.model import split_files

# 2^40 (~1.1e12) records per file, more than any file holds; an int64 key still has room for 2^23 files.
FILE_SHIFT = 40
_INDEX = (1 << FILE_SHIFT) - 1


def record_key(number: int, index: int) -> int:
    """The key of record `index` of the split's file `number` (0-based): the index itself in the first file."""
    return (number << FILE_SHIFT) | index


def file_number(key: int) -> int:
    """Which of the split's files (0-based) holds the record with this key."""
    return key >> FILE_SHIFT


def index_in_file(key: int) -> int:
    """The record's 0-based index in its own file, as findings name it (`record`)."""
    return key & _INDEX


def iter_split(files: Path | Sequence[Path], fmt: str = "auto", *,
               strict: bool = False) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """`(line, key, record)` for every record of the split's files in order, in chat form (`iter_canonical`;
    each file in its own format when `fmt` is auto, as the dataset stage reads it)."""
    for number, path in enumerate(split_files(files)):
        for line, index, record in iter_canonical(path, fmt, strict=strict):
            yield line, record_key(number, index), record


def feed_observers(files: Mapping[str, Path | Sequence[Path]], observers: Sequence[Any], fmt: str = "auto") -> None:
    """Read each split once and feed every record to the observers, as the dataset stage does.

    For a stage whose dataset read ran in another step, and for benchmarks of the observers alone.
    """
    for role, paths in files.items():
        for line, key, record in iter_split(paths, fmt):
            for observer in observers:
                observer.observe(role, line, key, record)
        for observer in observers:
            observer.finish(role)


class SplitNames:
    """How findings name the files of the splits and the records in them.

    A file is named by its name, or by its path where two files of the splits share a name (a
    `train.jsonl` in two folders); a split by its file, or its files joined with ` + `."""

    def __init__(self, files: Mapping[str, Sequence[Path]]):
        self.files = {role: split_files(paths) for role, paths in files.items()}
        every = [path for paths in self.files.values() for path in paths]
        clash = len({Path(p).name for p in every}) < len(every)
        self.names = {role: [shown(p) if clash else shown(Path(p).name) for p in paths]
                      for role, paths in self.files.items()}

    def split(self, role: str) -> str:
        """The split as a message names it: `train.jsonl`, or `a.jsonl + b.jsonl`."""
        return " + ".join(self.names[role])

    def at(self, role: str, key: int, line: int) -> str:
        """`name:line` of the record with this key."""
        return f"{self.names[role][file_number(key)]}:{line}"

    def file(self, role: str, key: int | None = None) -> str:
        """The file a finding names: the record's own, or for the split as a whole its first file."""
        return str(self.files[role][file_number(key) if key is not None else 0])

    def place(self, role: str, key: int, line: int) -> dict[str, Any]:
        """A finding's file, line and record for the record with this key."""
        return {"file": self.file(role, key), "line": line, "record": index_in_file(key)}
