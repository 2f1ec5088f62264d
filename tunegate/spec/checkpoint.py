"""What a model's own config.json says about its stored weights, read without transformers.

    found = config_of("./llama-3-8b-bnb-4bit", spec_folder)   # (shown path, config dict) or None
    stored = stored_quantization(found[1])                    # Stored(method="bitsandbytes", bits=4)
    missing_loaders(stored.method)                            # ["bitsandbytes"] where it is not installed

A checkpoint saved quantised (unsloth's `*-bnb-4bit`, TheBloke's `*-GPTQ` and `*-AWQ`) carries a
`quantization_config`, and transformers loads it through that method's package whatever the caller
asks for. Only a local folder (beside the spec first, then as written, as the estimate finds it) or
a config tunegate ships is read here: the spec stage never asks the hub. The estimate finds its
config through the same lookup (then the hub) and reads the same block for its memory (TG413).
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from tunegate.pathguard import shown

# The configs shipped with tunegate, one per hub id (`org--name.json`).
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "model_configs"
# A model's config.json is a few KB (Llama 3.1 405B's: 1 KB); anything this big is not one.
MAX_CONFIG_BYTES = 1 << 20

# The packages transformers' quantizer for each quant_method asks for before it loads anything
# (transformers/quantizers/quantizer_*.py, validate_environment): one module of each group. GPTQ:
# optimum and gptqmodel (transformers 4 also takes auto-gptq); AWQ: gptqmodel in transformers 5,
# autoawq (module `awq`) in transformers 4. A method not listed here is not checked.
LOADERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "bitsandbytes": (("bitsandbytes",),),
    "gptq": (("optimum",), ("gptqmodel", "auto_gptq")),
    "awq": (("gptqmodel", "awq"),),
}
_PIP = {"bitsandbytes": "bitsandbytes", "optimum": "optimum", "gptqmodel": "gptqmodel",
        "auto_gptq": "auto-gptq", "awq": "autoawq"}
_LABELS = {"bitsandbytes": "bitsandbytes", "gptq": "GPTQ", "awq": "AWQ"}
_INSTALL = {
    "bitsandbytes": "pip install 'tunegate[qlora]' (bitsandbytes; it also needs a CUDA GPU)",
    "gptq": "pip install optimum gptqmodel (GPTQ kernels want a CUDA GPU)",
    "awq": "pip install gptqmodel (transformers 5; with transformers 4, pip install autoawq)",
}


class Stored(NamedTuple):
    """How a checkpoint's weights are stored: its quant_method and bit width (None when unstated)."""

    method: str
    bits: int | None

    @property
    def label(self) -> str:
        return _LABELS.get(self.method, self.method)


def shipped_config_path(model_id: str) -> Path:
    """Where a shipped config for `org/name` lives: `data/model_configs/org--name.json`."""
    return SHIPPED / (model_id.strip("/").replace("/", "--") + ".json")


def _shipped_config(model_id: str) -> Path | None:
    """The shipped config of `org/name`, or None (also for a name no file system could hold)."""
    path = shipped_config_path(model_id)
    try:
        return path if path.is_file() else None
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return None


def _config_in(place: Path) -> Path | None:
    """The config.json a local model path names: a folder's config.json, or a `.json` file itself."""
    if place.is_dir() and (place / "config.json").is_file():
        return place / "config.json"
    return place if place.is_file() and place.suffix == ".json" else None


def beside_spec(model_id: str, base: Path) -> Path | None:
    """The local model model.id names beside the spec in `base` (a folder holding a config.json, or
    a config `.json` file), absolute; None for a hub id, an absolute path, or nothing there. Every
    stage and the trainer read model.id so (`Spec.resolve_paths`), whatever the working folder."""
    try:
        local = Path(model_id).expanduser()
        if local.is_absolute():
            return None
        place = base / local
        if _config_in(place) is not None:
            return Path(os.path.abspath(place))
    except (OSError, RuntimeError, ValueError):  # a name too long, a symlink loop, ~user with no home
        return None
    return None


# Name parts of a chat-tuned release whose architecture is its base model's (Llama-3.1-8B-Instruct,
# Qwen2.5-7B-Instruct, Mistral-7B-Instruct-v0.3, gemma-2-9b-it): the same config but for its tokens.
_CHAT_PARTS = {"instruct", "chat", "it"}


def shipped_base_config(model_id: str) -> Path | None:
    """The shipped config of the base model a chat-tuned id was made from (`Meta-Llama-3-8B-Instruct` ->
    `Meta-Llama-3-8B`), or None: a fine-tune keeps its base's architecture, so its memory and speed
    are the base's. A release date after the chat part (`-Instruct-2507`) goes with it."""
    org, _, name = model_id.strip("/").rpartition("/")
    parts = name.split("-")
    kept = [p for i, p in enumerate(parts) if p.lower() not in _CHAT_PARTS
            and not (p.isdigit() and len(p) == 4 and i and parts[i - 1].lower() in _CHAT_PARTS)]
    if not org or kept == parts or not kept:
        return None
    return _shipped_config(f"{org}/{'-'.join(kept)}")


def local_config_path(model_id: str, base: Path | None = None) -> Path | None:
    """model.id's config.json on this disk, or None: a folder or `.json` file beside the spec
    (`base`) first, then as written, then the configs tunegate ships. The path is as found, not
    resolved, so a report shows what the user wrote."""
    try:
        local = Path(model_id).expanduser()
        places = ([base / local] if base is not None and not local.is_absolute() else []) + [local]
        found = next((c for c in map(_config_in, places) if c is not None), None)
        if found is not None:
            return found
        return _shipped_config(model_id)
    except (OSError, RuntimeError, ValueError):  # a name too long, a symlink loop, ~user with no home
        return None


def read_config(path: Path) -> dict[str, Any]:
    """The JSON object in a config.json.

    Raises:
        ValueError: the file is unreadable, too big to be a config, not JSON, or not an object.
    """
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ValueError(f"{path}: {size:,} bytes is not a model config.json (those are a few KB)")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON config ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: config.json must hold a JSON object")
    return data


def config_of(model_id: str, base: Path | None) -> tuple[str, dict[str, Any]] | None:
    """(where, config) of model.id's config.json on this disk (local_config_path); else None."""
    path = local_config_path(model_id, base)
    if path is None:
        return None
    try:
        return shown(path.resolve()), read_config(path)
    except (OSError, RuntimeError, ValueError):  # unreadable: the estimate says so (TG405)
        return None


def stored_quantization(config: dict[str, Any]) -> Stored | None:
    """The stored quantisation its `quantization_config` declares; None for 16-bit weights.

    bitsandbytes counts only with `load_in_4bit` or `load_in_8bit` set (transformers 5 also writes
    `_load_in_4bit`), as the estimate reads it; a config without `quant_method` is bitsandbytes's
    older form.
    """
    q = config.get("quantization_config")
    if not isinstance(q, dict) or not q:
        return None
    method = str(q.get("quant_method") or "bitsandbytes").lower()
    if method == "bitsandbytes":
        bits = 4 if q.get("load_in_4bit") or q.get("_load_in_4bit") else \
            8 if q.get("load_in_8bit") or q.get("_load_in_8bit") else None
        return Stored(method, bits) if bits else None
    bits = q.get("bits")  # GPTQ, AWQ, HQQ, ... write their bit width; fp8 stores one byte per weight
    if not isinstance(bits, int) or isinstance(bits, bool):
        bits = 8 if "fp8" in method else None
    return Stored(method, bits)


def missing_loaders(method: str) -> list[str]:
    """The packages (pip names) loading a checkpoint stored with `method` needs and this install lacks."""
    return [_PIP[group[0]] + "".join(f" (or {_PIP[m]})" for m in group[1:]) for group in LOADERS.get(method, ())
            if not any(importlib.util.find_spec(m) for m in group)]


def install_hint(method: str) -> str:
    return _INSTALL[method]


def pip_name(module: str) -> str:
    """The package a loader's module is installed as (`auto_gptq` -> auto-gptq)."""
    return _PIP.get(module, module)
