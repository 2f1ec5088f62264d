"""Where LLaMA-Factory loads a dataset_info.json entry's records from, as `get_dataset_list` chooses.

    entry_files(cmap, folder, "alpaca_en_demo", {"file_name": "alpaca_en_demo.json"})  # [".../alpaca_en_demo.json"]
    elsewhere("deepctrl", {"ms_hub_url": "deepctrl/deepctrl-sft-data"})                # Unread: not read here

Part of the LLaMA-Factory dialect's datasets (`tunegate.spec.importers.llamafactory_datasets`):
`hf_hub_url` first (a Hub id, read from the local Hub cache), then `file_name` (a file, or a folder
whose every file is the dataset) in `dataset_dir`, with the suffixes `_load_single_dataset` reads.
A Hub dataset's `subset` or `folder`, ModelScope, Modelers, a loading script and S3/GCS storage are
loaded where LLaMA-Factory runs and not read here (`elsewhere`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tunegate.pathguard import shown
from tunegate.spec.importers.config_data import unusable_data
from tunegate.spec.importers.config_keys import refused_by_tool
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.llamafactory_layouts import NOT_READ, Unread
from tunegate.spec.path_names import path_problem

# The suffixes _load_single_dataset reads (FILEEXT2TYPE); any other stops it ("Allowed file types: ...").
_FILE_TYPES = {"arrow": "arrow", "csv": "csv", "json": "json", "jsonl": "json", "parquet": "parquet", "txt": "text"}

# Where else get_dataset_list has LLaMA-Factory load an entry from (without hf_hub_url, in this order), and what
# the machine it runs on needs for it (_load_single_dataset): none of them is read here.
_ELSEWHERE = (("ms_hub_url", "the ModelScope hub", "modelscope installed"),
              ("om_hub_url", "the Modelers hub", "openmind installed"),
              ("script_url", "a dataset loading script in dataset_dir", "the script"),
              ("cloud_file_name", "S3 or GCS storage", "s3fs or gcsfs installed, and access"))


def elsewhere(name: str, attrs: dict[str, Any]) -> Unread | None:
    """Why LLaMA-Factory loads the entry from where tunegate does not read it; None for a file or a Hub dataset
    whose own split files tunegate reads from the local cache."""
    hub = attrs.get("hf_hub_url")
    if isinstance(hub, str) and hub:
        part = next((k for k in ("subset", "folder") if attrs.get(k)), None)
        if part is None:
            return None
        how = "name" if part == "subset" else "data_dir"
        return Unread(f"{name}.{part}", f"{name} is the {attrs[part]!r} {part} of the Hub dataset {hub!r}, which "
                      f"LLaMA-Factory loads (load_dataset({hub!r}, {how}={attrs[part]!r})) and tunegate does not read "
                      f"(it reads a cached dataset's own split files), {NOT_READ}", "To gate the data, check a local "
                      "copy of it: tunegate check CONFIG --train FILE --validation FILE.")
    key, where, needs = next((row for row in _ELSEWHERE if attrs.get(row[0])), (None, "", ""))
    if key is None:
        return None
    return Unread(f"{name}.{key}", f"{name} is read from {where} ({attrs[key]!r}), which LLaMA-Factory loads where it "
                  f"runs ({needs} there) and tunegate does not read (it reads local files and the Hugging Face Hub "
                  f"cache), {NOT_READ}", "To gate the data, save it as a local file and register it with file_name, "
                  "or check a local copy: tunegate check CONFIG --train FILE --validation FILE.")


def entry_files(cmap: ConfigMap, folder: Path, name: str, attrs: dict[str, Any]) -> list[str] | None:
    """Where the entry's records are (a Hub id, or local files), as get_dataset_list chooses."""
    hub = attrs.get("hf_hub_url")
    if isinstance(hub, str) and hub:
        return [hub]
    file_name = attrs.get("file_name")
    if not isinstance(file_name, str) or not file_name:
        unusable_data(cmap, name, f"{name} has no file_name (nor a hub URL): LLaMA-Factory cannot load it",
                      f"Give it \"file_name\": the data file in {folder}.")
        return None
    if problem := path_problem(file_name):
        unusable_data(cmap, f"{name}.file_name", f"{name}.file_name {shown(file_name)!r} is not a usable path: "
                      f"{problem}", f"Give it \"file_name\": the data file in {folder}.")
        return None
    return _local(cmap, folder / file_name, f"{name}.file_name")


def _local(cmap: ConfigMap, path: Path, key: str) -> list[str] | None:
    """The files LLaMA-Factory reads at `path`: the file itself, or every file of a folder, as one dataset
    (read here in name order; LLaMA-Factory takes the folder's listing order)."""
    try:
        files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    except OSError as exc:  # a folder that cannot be listed, a path past the system's length
        unusable_data(cmap, key, f"{shown(path)} cannot be read: {exc.strerror or exc}",
                      "Register a file (or folder) that can be read.")
        return None
    if not files:
        refused_by_tool(cmap, key, f"{path} holds no file: LLaMA-Factory loads no data from it",
                        "Put the dataset's files in the folder, or register a file.")
        return None
    suffix = files[0].suffix.lower().lstrip(".")
    if suffix == "txt":
        unusable_data(cmap, key, f"{files[0].name} is text: LLaMA-Factory reads each line as {{\"text\": ...}} "
                      "(pre-training documents), not supervised fine-tuning examples",
                      "Write the examples as JSON records (alpaca or sharegpt) and register that file.")
        return None
    if suffix not in _FILE_TYPES:
        refused_by_tool(cmap, key, f"{files[0].name}: LLaMA-Factory reads files ending in "
                        f"{', '.join('.' + s for s in _FILE_TYPES)} only (\"Allowed file types: ...\")",
                        "Save the data as .json or .jsonl (gunzip a .jsonl.gz first).")
        return None
    other = next((p for p in files if _FILE_TYPES.get(p.suffix.lower().lstrip(".")) != _FILE_TYPES[suffix]), None)
    if other is not None:
        refused_by_tool(cmap, key, f"{path} holds {files[0].name} and {other.name}: LLaMA-Factory reads every file "
                        "of a dataset folder with one loader and stops (\"File types should be identical.\")",
                        "Keep files of one type in the folder (move the others out).")
        return None
    return [str(p) for p in files]
