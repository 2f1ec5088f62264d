"""Where a config's dataset reference points: a local file, a folder's split, or a Hub id (cached?).

    resolve("data/chat.jsonl", base, "train")        # a file, relative to the config or the working dir
    resolve("data/my_set", base, "test")              # a folder: its test split's files (test.jsonl, test-*.parquet)
    resolve("data/saved", base, "train", from_disk=True)   # a save_to_disk folder, as load_from_disk reads it
    resolve("tatsu-lab/alpaca", base, "train")        # a Hub id: its files in the local Hub cache, if there

A split may be several files (shards `train-00000-of-00003.parquet`, ..., a `save_to_disk` split in
several `.arrow` files): `files` lists them in the order `load_dataset` and `load_from_disk`
concatenate them (shard names sorted, as datasets sorts the files a pattern matches; the order of
`state.json`), and tunegate reads them so, as one split.

Offline, a Hub dataset can only be read when a previous `load_dataset` or `hf download` left its
files in the Hugging Face Hub cache ($HF_HUB_CACHE, $HF_HOME/hub, or ~/.cache/huggingface/hub);
its raw data files (JSONL, JSON, parquet, CSV) are read from the newest snapshot there.

A config's reference and split are the user's text: a NUL byte, a name longer than a file system
allows, a split that is no split name (`/abs/*`, which pathlib's glob refuses with
NotImplementedError) or a folder that cannot be listed is a `problem` naming it, never an exception.
"""
from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tunegate.pathguard import shown
from tunegate.spec.path_names import path_problem

_GIVE_A_PATH = "Give the path of the local data file (or folder), or a Hub dataset id."
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# The extensions `load_dataset` reads a folder's split files by (datasets' _EXTENSION_TO_MODULE), as tunegate reads them
_EXTS = (".jsonl", ".jsonl.gz", ".ndjson", ".json", ".json.gz", ".parquet", ".csv", ".csv.gz", ".tsv", ".tsv.gz",
         ".arrow")


@dataclass(frozen=True)
class Resolved:
    """What a dataset reference names."""

    files: tuple[Path, ...] = ()  # the split's files, in reading order (none: see `problem`, or `hub_id`)
    hub_id: str | None = None  # set when the reference is a Hub dataset id
    problem: str = ""  # why the tool cannot load the split from it (no such split, a folder it refuses)
    fix: str = ""  # what to do about the problem


def hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = Path(os.environ["HF_HOME"]) if os.environ.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    return home / "hub"


def resolve(ref: str, base: Path, split: str = "train", from_disk: bool = False) -> Resolved:
    """The file `ref` means for `split`. A folder `DatasetDict.save_to_disk` wrote gives its split's Arrow
    file (`load_dataset` and `load_from_disk` both read it so); one `Dataset.save_to_disk` wrote is read as
    `load_from_disk` reads it when `from_disk` (axolotl tries that first for a folder), and is refused as
    `load_dataset` refuses it otherwise."""
    problem = path_problem(ref)
    if problem:
        return Resolved(problem=f"{shown(ref)!r} is not a usable path: {problem}", fix=_GIVE_A_PATH)
    if "/" in split or "\0" in split or split in ("", ".", ".."):  # a path, not a name (`/abs`: glob refuses it)
        return Resolved(problem=f"the split {shown(split)!r} is no split name",
                        fix="Name the split (train, validation, test), not a path or a pattern.")
    try:
        return _resolve(ref, base, split, from_disk)
    except (OSError, RuntimeError, ValueError) as exc:  # a loop, a folder that cannot be listed
        return Resolved(problem=f"{shown(ref)!r} cannot be read: {getattr(exc, 'strerror', None) or exc}",
                        fix=_GIVE_A_PATH)


def unusable(ref: str) -> str | None:
    """Why the reference `ref` cannot be a path at all (a NUL byte, a name too long), or None."""
    return path_problem(ref)


def _resolve(ref: str, base: Path, split: str, from_disk: bool) -> Resolved:
    for candidate in (Path(ref),) if Path(ref).is_absolute() else (base / ref, Path.cwd() / ref):
        if candidate.is_file():
            return Resolved((candidate.resolve(),))
        if candidate.is_dir():
            folder = candidate.resolve()
            if (folder / _STATE).is_file() and not from_disk:
                return Resolved(problem=f"{folder} was written by `save_to_disk`, and load_dataset refuses it "
                                        "(\"Please use `load_from_disk` instead.\")", fix=_SAVE_SPLITS)
            if (folder / _STATE).is_file() or (folder / _SPLITS).is_file():
                return _saved(folder, split)
            return _in_folder(folder, split)
    if _HUB_ID.match(ref):
        snapshots = hub_cache() / f"datasets--{ref.replace('/', '--')}" / "snapshots"
        newest = max(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, default=None) if snapshots.is_dir() else None
        if newest is None:
            return Resolved(hub_id=ref)
        found = _in_folder(newest, split)
        return Resolved(found.files, hub_id=ref, problem=found.problem, fix=found.fix)
    return Resolved(((base / ref).resolve(),))  # missing: the dataset stage says so (TG240)


_STATE, _SPLITS = "state.json", "dataset_dict.json"  # what save_to_disk writes beside a Dataset's / DatasetDict's
_SAVE_SPLITS = ("Save a DatasetDict (train and test) with save_to_disk instead, or write the splits as files "
                "(train.jsonl, test.jsonl) in a folder.")


def _saved(folder: Path, split: str) -> Resolved:
    """A `save_to_disk` folder's Arrow files for `split` (a DatasetDict's split folder, or the Dataset itself),
    in the order of its state.json, as load_from_disk concatenates them."""
    try:
        if (folder / _SPLITS).is_file():
            splits = json.loads((folder / _SPLITS).read_text(encoding="utf-8"))["splits"]
            if split not in splits:
                return Resolved(problem=f"{folder} (save_to_disk) has no split {split!r}: it has {splits}",
                                fix=f"Name one of its splits ({', '.join(map(str, splits))}), or save the "
                                    f"{split!r} split into it.")
            folder = folder / split
        state = json.loads((folder / _STATE).read_text(encoding="utf-8"))
        shards = tuple(folder / entry["filename"] for entry in state["_data_files"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Resolved(problem=f"{folder} is not a readable save_to_disk folder ({type(exc).__name__}: {exc})",
                        fix="Save the dataset again with save_to_disk, or write the splits as files.")
    if not shards:
        return Resolved(problem=f"{folder} (save_to_disk) lists no data files in its {_STATE}",
                        fix="Save the dataset again with save_to_disk, or write the splits as files.")
    return Resolved(shards)


def _in_folder(folder: Path, split: str) -> Resolved:
    """A folder's files for `split` (one, or its shards in name order), named as `datasets.load_dataset(folder)`
    finds splits."""
    for ext in _EXTS:
        for name in (f"{split}{ext}", f"data/{split}{ext}"):
            if (folder / name).is_file():
                return Resolved((folder / name,))
    # The split is the user's text: its `*`, `?` and `[` are characters of a name, not a pattern.
    shards = tuple(sorted(p for ext in _EXTS for p in folder.rglob(f"{glob.escape(split)}-*{ext}")))
    if shards:
        return Resolved(shards)
    files = tuple(sorted(p for ext in _EXTS for p in folder.glob(f"*{ext}")))
    if split == "train" and files:  # none named for a split: every data file is the train split, as load_dataset has it
        return Resolved(files)
    return Resolved(problem=f"{folder} has no file for split {split!r} (looked for {split}.jsonl, "
                            f"{split}.json, {split}.parquet, {split}.csv, data/{split}-*.parquet)",
                    fix=f"Give the folder a file for the {split!r} split ({split}.jsonl, or shards "
                        f"data/{split}-00000-of-00002.parquet, ...), or name the split that it has.")
