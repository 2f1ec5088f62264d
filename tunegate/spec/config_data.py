"""The data part of an imported config: one training file, one frozen validation file, their format.

Shared by the axolotl and TRL mappings. A Hub id is read from the local Hub cache when its files
are there (TG148, info) and is an error otherwise (TG142): offline it cannot be read, so the data
stages cannot run and nothing is approved. Several files for one split are TG146: tunegate checks
exactly the one file a run reads.
"""
from __future__ import annotations

from typing import Any

from tunegate.spec.config_map import ConfigMap
from tunegate.spec.data_source import hub_cache, resolve


def replaced(cmap: ConfigMap, role: str, ref: Any, key: str | None) -> None:
    """data.<role> is the file --train/--validation gave; TG157 says what the config itself names."""
    given = cmap.overrides[role]
    cmap.set(f"data.{role}", str(given), key)
    names = f"{key} names {ref!r}" if key and ref is not None else f"the config names no {role} file"
    cmap.note("TG157", "info", key,
              f"{names}; this check reads --{role} {given} instead, so a run from the config itself reads other "
              "data than what was checked", f"Nothing to fix for this check. Before launching from the config, "
              f"point it at {given} (or check the data it names).")


def map_data_file(cmap: ConfigMap, role: str, ref: Any, key: str, split: str = "train") -> bool:
    """Set data.<role> from a dataset reference; a finding (and False) when it cannot be read. A
    file given for the role on the command line replaces the reference (TG157)."""
    cmap.explained.add(f"data.{role}")
    if role in cmap.overrides:
        replaced(cmap, role, ref, key)
        return True
    if not isinstance(ref, str) or not ref:
        cmap.note("TG145", "error", key, f"{key} is {ref!r}, not a dataset path or id", "Give the path of the "
                  "local data file (or folder), or a Hub dataset id that is in the local cache.")
        return False
    found = resolve(ref, cmap.base, split, from_disk=cmap.kind == "axolotl")  # axolotl tries load_from_disk first
    if found.path is not None:
        cmap.set(f"data.{role}", str(found.path), key)
        if found.hub_id:
            cmap.note("TG148", "info", key, f"{ref!r} is a Hugging Face Hub dataset; its {split} split is read from "
                      f"the local Hub cache: {found.path}", "Nothing to fix. The cached snapshot is what was "
                      "checked; a newer revision on the Hub would be different data.")
        return True
    if found.hub_id and not found.problem:
        cmap.note("TG142", "error", key, f"{ref!r} is a Hugging Face Hub dataset id and is not in the local Hub "
                  f"cache ({hub_cache()}): offline it cannot be read, so the data stages cannot run",
                  f"Download it once where the Hub is reachable (`hf download --repo-type dataset {ref}`, or "
                  "`datasets.load_dataset(...)`), or point the config at a local file (or check local copies: "
                  "tunegate check CONFIG --train FILE --validation FILE).")
    else:
        cmap.note("TG146", "error", key, f"{key}: {found.problem}", "Point the config at one file per split (merge "
                  "shards with `cat` or `pyarrow.parquet.write_table`): tunegate checks the exact file a run reads.")
    return False
