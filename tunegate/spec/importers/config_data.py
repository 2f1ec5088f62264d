"""The data part of an imported config: the training files, the frozen validation files, their format.

Shared by every dialect's mapping. A split is one file or several (several datasets the tool
concatenates, a dataset's shards), read in order as the tool reads them. A Hub id is read from
the local Hub cache when its files are there (TG148, info) and is an error otherwise (TG142):
offline it cannot be read, so the data stages cannot run and nothing is approved. TG141, TG142
and TG143 say a split's data cannot be had here: they are the dataset stage's findings
(`ConfigMap.unavailable`), so the spec stage, the estimate and every other check that needs no
data still run, all at once. A reference the tool cannot load as a split (a folder without the
split, one `load_dataset` refuses) is TG146. A random split of the training data (TG141) or none
at all (TG143) is no frozen validation set. Each code is produced here once; a dialect says its own
case through the function that produces it:

    map_data_file(cmap, "train", "data/chat.jsonl", "datasets.0.path")       # TG142, TG145, TG146, TG148
    map_data_files(cmap, "train", [Source("a.json", "dataset"), Source("b.json", "dataset")], "dataset")
    no_validation(cmap, None, "val_set_size is 0 and test_datasets is not set", "List its file ...")
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunegate.pathguard import shown
from tunegate.report import Finding
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.data_source import hub_cache, resolve, unusable

NOT_CACHED = "TG142"  # a Hub dataset that is not in the local cache (a dialect asks, to say it once)
_NOT_FROZEN = ": not a frozen validation file, so scores of different runs are not comparable"


@dataclass(frozen=True)
class Source:
    """One dataset reference of a split, as the config writes it."""

    ref: Any  # a path, a folder or a Hub id (anything else is TG145)
    key: str | None  # the config key that names it
    split: str = "train"  # the split of a folder or Hub dataset to read


def replaced(cmap: ConfigMap, role: str, ref: Any, key: str | None) -> None:
    """data.<role> is the file (or files) --train/--validation gave; TG157 says what the config itself names."""
    given = cmap.overrides[role]
    files = [str(p) for p in given] if isinstance(given, list) else [str(given)]
    cmap.set(f"data.{role}", files if len(files) > 1 else files[0], key)
    shown = " ".join(files)
    names = f"{key} names {ref!r}" if key and ref is not None else f"the config names no {role} file"
    cmap.note("TG157", "info", key,
              f"{names}; this check reads --{role} {shown} instead, so a run from the config itself reads other "
              "data than what was checked", f"Nothing to fix for this check. Before launching from the config, "
              f"point it at {shown} (or check the data it names).")


def map_data_file(cmap: ConfigMap, role: str, ref: Any, key: str | None, split: str = "train",
                  from_disk: bool = False) -> bool:
    """Set data.<role> from a dataset reference (a file, or a folder or Hub split of one file or several);
    a finding (and False) when it cannot be read. A file given for the role on the command line
    replaces the reference (TG157). `from_disk`: the tool reads a `save_to_disk` folder with
    `load_from_disk` first (axolotl does)."""
    return map_data_files(cmap, role, [Source(ref, key, split)], key, from_disk)


def map_data_files(cmap: ConfigMap, role: str, sources: list[Source], key: str | None,
                   from_disk: bool = False) -> bool:
    """Set data.<role> from several dataset references, their files concatenated in order as the tool
    concatenates them (`key`: where the split is named as a whole); every reference that cannot be read
    is said, and False returned. Given files (--train/--validation) replace them all (TG157)."""
    cmap.explained.add(f"data.{role}")
    if role in cmap.overrides:
        refs = [s.ref for s in sources]
        replaced(cmap, role, refs[0] if len(refs) == 1 else refs, key)
        return True
    found = [source_files(cmap, role, source, from_disk) for source in sources]
    if any(files is None for files in found):
        return False
    set_data(cmap, role, [path for files in found for path in files or []], key)
    return True


def set_data(cmap: ConfigMap, role: str, files: list[Path], key: str | None) -> None:
    """data.<role> is these files: one as a path, as it always was, several as a list."""
    cmap.set(f"data.{role}", str(files[0]) if len(files) == 1 else [str(p) for p in files], key)


def source_files(cmap: ConfigMap, role: str, source: Source, from_disk: bool = False) -> list[Path] | None:
    """The files one dataset reference names for its split, in order; a finding (and None) when there are
    none to read here (TG145 not a reference, TG142 a Hub id not cached, TG146 a split the tool cannot load)."""
    ref, key, split = source.ref, source.key, source.split
    if not isinstance(ref, str) or not ref:
        unusable_data(cmap, key, f"{key} is {ref!r}, not a dataset path or id", "Give the path of the local data "
                      "file (or folder), or a Hub dataset id that is in the local cache.")
        return None
    problem = unusable(ref)
    if problem:  # a NUL byte, a name too long: no file system holds it
        unusable_data(cmap, key, f"{key} {shown(ref)!r} is not a usable path: {problem}",
                      "Give the path of the local data file (or folder), or a Hub dataset id.")
        return None
    found = resolve(ref, cmap.base, split, from_disk=from_disk)
    if found.files:
        if found.hub_id:
            more = f" and {len(found.files) - 1} more shard(s)" if len(found.files) > 1 else ""
            cmap.note("TG148", "info", key, f"{ref!r} is a Hugging Face Hub dataset; its {split} split is read from "
                      f"the local Hub cache: {found.files[0]}{more}", "Nothing to fix. The cached snapshot is what "
                      "was checked; a newer revision on the Hub would be different data.")
        return list(found.files)
    if found.hub_id and not found.problem:
        unavailable(cmap, role, cmap.finding(
            NOT_CACHED, "error", key, f"{ref!r} is a Hugging Face Hub dataset id and is not in the local Hub cache "
            f"({hub_cache()}): offline it cannot be read, so the data stages cannot run (every other check does)",
            f"Download it once where the Hub is reachable (`hf download --repo-type dataset {ref}`, or "
            "`datasets.load_dataset(...)`), or point the config at a local file (or check local copies: "
            "tunegate check CONFIG --train FILE --validation FILE).", stage="dataset"), ref)
    else:
        no_split(cmap, key, f"{key}: {found.problem}", found.fix)
    return None


def unusable_data(cmap: ConfigMap, key: str | None, message: str, hint: str) -> None:
    """TG145 at `key`: the config names no data tunegate can read as the tool reads it."""
    cmap.note("TG145", "error", key, message, hint)


def not_read_here(cmap: ConfigMap, role: str, key: str, message: str, hint: str) -> None:
    """TG145 at `key`, said by the dataset stage: the tool reads data.<role> in a way tunegate does not
    (a dataset type of its own), so it cannot be checked here; no reason the tool refuses the run."""
    unavailable(cmap, role, cmap.finding("TG145", "error", key, message, hint, "dataset"))


def no_split(cmap: ConfigMap, key: str | None, message: str, hint: str) -> None:
    """TG146 at `key`: the reference names no split the tool can load (no file for it, a folder it refuses)."""
    cmap.note("TG146", "error", key, message, hint)


def random_split(cmap: ConfigMap, key: str, split: str, hint: str) -> None:
    """TG141 at `key`: `split` says how the tool splits a random share of the training data off."""
    unavailable(cmap, "validation", cmap.finding("TG141", "error", key, f"{split}{_NOT_FROZEN}", hint, "dataset"))


def no_validation(cmap: ConfigMap, key: str | None, why: str, hint: str) -> None:
    """TG143 (at `key`, when there is one to point at): the run would have no validation data."""
    unavailable(cmap, "validation", cmap.finding("TG143", "error", key, f"no validation data: {why}", hint, "dataset"))


def unavailable(cmap: ConfigMap, role: str, finding: Finding, ref: Any = None) -> None:
    """data.<role> cannot be had here, for the reason `finding` gives (the dataset stage's, TG141-TG143).

    data.<role> holds the reference as written (a Hub id), or a name that is no file, so the spec is
    whole and its other checks run; no stage reads a file for the role."""
    cmap.unavailable[role] = finding
    cmap.explained.add(f"data.{role}")
    cmap.set(f"data.{role}", ref if isinstance(ref, str) and ref else f"(no {role} file: {finding.key or finding.code})")
