"""The data part of an imported config: one training file, one frozen validation file, their format.

Shared by every dialect's mapping. A Hub id is read from the local Hub cache when its files are
there (TG148, info) and is an error otherwise (TG142): offline it cannot be read, so the data
stages cannot run and nothing is approved. Several files for one split are TG146: tunegate checks
exactly the one file a run reads. A random split of the training data (TG141) or none at all
(TG143) is no frozen validation set. Each code is produced here once; a dialect says its own case
through the function that produces it:

    map_data_file(cmap, "train", "data/chat.jsonl", "datasets.0.path")       # TG142, TG145, TG146, TG148
    no_validation(cmap, None, "val_set_size is 0 and test_datasets is not set", "List its file ...")
"""
from __future__ import annotations

from typing import Any

from tunegate.pathguard import shown
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.data_source import hub_cache, resolve, unusable

NOT_CACHED = "TG142"  # a Hub dataset that is not in the local cache (a dialect asks, to say it once)
_NOT_FROZEN = ": not a frozen validation file, so scores of different runs are not comparable"


def replaced(cmap: ConfigMap, role: str, ref: Any, key: str | None) -> None:
    """data.<role> is the file --train/--validation gave; TG157 says what the config itself names."""
    given = cmap.overrides[role]
    cmap.set(f"data.{role}", str(given), key)
    names = f"{key} names {ref!r}" if key and ref is not None else f"the config names no {role} file"
    cmap.note("TG157", "info", key,
              f"{names}; this check reads --{role} {given} instead, so a run from the config itself reads other "
              "data than what was checked", f"Nothing to fix for this check. Before launching from the config, "
              f"point it at {given} (or check the data it names).")


def map_data_file(cmap: ConfigMap, role: str, ref: Any, key: str | None, split: str = "train",
                  from_disk: bool = False) -> bool:
    """Set data.<role> from a dataset reference; a finding (and False) when it cannot be read. A
    file given for the role on the command line replaces the reference (TG157). `from_disk`: the tool
    reads a `save_to_disk` folder with `load_from_disk` first (axolotl does)."""
    cmap.explained.add(f"data.{role}")
    if role in cmap.overrides:
        replaced(cmap, role, ref, key)
        return True
    if not isinstance(ref, str) or not ref:
        unusable_data(cmap, key, f"{key} is {ref!r}, not a dataset path or id", "Give the path of the local data "
                      "file (or folder), or a Hub dataset id that is in the local cache.")
        return False
    problem = unusable(ref)
    if problem:  # a NUL byte, a name too long: no file system holds it
        unusable_data(cmap, key, f"{key} {shown(ref)!r} is not a usable path: {problem}",
                      "Give the path of the local data file (or folder), or a Hub dataset id.")
        return False
    found = resolve(ref, cmap.base, split, from_disk=from_disk)
    if found.path is not None:
        cmap.set(f"data.{role}", str(found.path), key)
        if found.hub_id:
            cmap.note("TG148", "info", key, f"{ref!r} is a Hugging Face Hub dataset; its {split} split is read from "
                      f"the local Hub cache: {found.path}", "Nothing to fix. The cached snapshot is what was "
                      "checked; a newer revision on the Hub would be different data.")
        return True
    if found.hub_id and not found.problem:
        cmap.note(NOT_CACHED, "error", key, f"{ref!r} is a Hugging Face Hub dataset id and is not in the local Hub "
                  f"cache ({hub_cache()}): offline it cannot be read, so the data stages cannot run",
                  f"Download it once where the Hub is reachable (`hf download --repo-type dataset {ref}`, or "
                  "`datasets.load_dataset(...)`), or point the config at a local file (or check local copies: "
                  "tunegate check CONFIG --train FILE --validation FILE).")
    else:
        several_files(cmap, key, f"{key}: {found.problem}", "Point the config at one file per split (merge shards "
                      "with `cat` or `pyarrow.parquet.write_table`): tunegate checks the exact file a run reads.")
    return False


def unusable_data(cmap: ConfigMap, key: str | None, message: str, hint: str) -> None:
    """TG145 at `key`: the config names no data tunegate can read as the tool reads it."""
    cmap.note("TG145", "error", key, message, hint)


def several_files(cmap: ConfigMap, key: str | None, message: str, hint: str) -> None:
    """TG146 at `key`: one split is several files (a mixture, shards); tunegate checks one file per split."""
    cmap.note("TG146", "error", key, message, hint)


def random_split(cmap: ConfigMap, key: str, split: str, hint: str) -> None:
    """TG141 at `key`: `split` says how the tool splits a random share of the training data off."""
    cmap.note("TG141", "error", key, f"{split}{_NOT_FROZEN}", hint)


def no_validation(cmap: ConfigMap, key: str | None, why: str, hint: str) -> None:
    """TG143 (at `key`, when there is one to point at): the run would have no validation data."""
    cmap.note("TG143", "error", key, f"no validation data: {why}", hint)
