"""JSON files that describe datasets rather than hold records: tool registries and `save_to_disk` indexes.

    metadata_kind(Path("data/dataset_info.json"))   # "LLaMA-Factory's dataset registry (dataset_info.json)"
    metadata_kind(Path("data/train.json"))          # None: records, checked as data

They sit beside the data files in a data/ folder, so `tunegate lint` (and the pre-commit hook, whose
pattern claims .json files in data folders) is given them too; read as records, every one is
"pretty-printed JSON" (TG220) and fails the hook of every LLaMA-Factory repository. A file is
metadata only when its name is one of these tools' metadata files AND it is one JSON object of
the shape the tool writes; a file of records under such a name is still checked.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Larger than any registry (LLaMA-Factory's own lists ~200 datasets in 30 kB); a bigger file is data.
MAX_BYTES = 4 * 1024 * 1024
# The keys an entry of LLaMA-Factory's dataset_info.json names its source with (DatasetAttr's load_from).
_LLAMAFACTORY_SOURCES = {"file_name", "hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name"}


def metadata_kind(path: Path) -> str | None:
    """What metadata file `path` is, or None when it is (or may be) a data file."""
    name = path.name.lower()
    if name not in _KINDS:
        return None
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):  # unreadable or not one JSON document: the data checks say why
        return None
    return _KINDS[name](data) if isinstance(data, dict) and data else None


def _dataset_info(data: dict[str, Any]) -> str | None:
    if all(isinstance(v, dict) and _LLAMAFACTORY_SOURCES & v.keys() for v in data.values()):
        return "LLaMA-Factory's dataset registry (dataset_info.json: dataset names and their files)"
    if {"features", "builder_name", "splits"} & data.keys():
        return "a Hugging Face datasets dataset_info.json (a dataset's features and splits)"
    return None


def _dataset_infos(data: dict[str, Any]) -> str | None:
    if all(isinstance(v, dict) and {"features", "splits"} & v.keys() for v in data.values()):
        return "a Hugging Face datasets dataset_infos.json (each configuration's features and splits)"
    return None


def _dataset_dict(data: dict[str, Any]) -> str | None:
    return "a save_to_disk DatasetDict index (dataset_dict.json)" if isinstance(data.get("splits"), list) else None


def _state(data: dict[str, Any]) -> str | None:
    return "a save_to_disk state file (state.json)" if isinstance(data.get("_data_files"), list) else None


_KINDS = {"dataset_info.json": _dataset_info, "dataset_infos.json": _dataset_infos,
          "dataset_dict.json": _dataset_dict, "state.json": _state}
