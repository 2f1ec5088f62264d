"""The config dialects tunegate reads, one row each: the one list detection, `--from` and the mapping read.

    detect_kind({"base_model": "...", "datasets": [...]})   # "axolotl"
    dialect("trl").docs                                      # "docs/trl.md"
    detect_kind({"stage": "sft", "finetuning_type": "lora"})  # "llamafactory"

A dialect is one module here exporting `DIALECT` (`tunegate.spec.importers.config_map.Dialect`: its
markers, its map function, its fix wording, its docs page) plus its row in DIALECTS. A row names
its module rather than importing it: a tunegate spec, the usual file, never loads a dialect nor
the mapping machinery (~2 ms), and detection loads them only for a file with no spec section.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tunegate.spec.importers.config_map import Dialect

# dialect name -> the module that declares it. The order breaks a tie between their markers.
DIALECTS = {
    "axolotl": "tunegate.spec.importers.axolotl_dialect",
    "trl": "tunegate.spec.importers.trl_dialect",
    "llamafactory": "tunegate.spec.importers.llamafactory_dialect",
}
KINDS = ("tunegate", *DIALECTS)  # what `--from` takes and ParsedSpec.kind holds


def dialect(name: str) -> Dialect:
    """The dialect registered as `name` (its module is imported on first use)."""
    return importlib.import_module(DIALECTS[name]).DIALECT


def detect_kind(data: Any) -> str:
    """The tool a config is written for: the one whose marker keys it has most of, else tunegate. A tie
    goes to a tool whose model key the config has (TRL's `model_name_or_path` with a `datasets` mixture
    is no axolotl config: axolotl cannot train without `base_model`), then to the first listed."""
    from tunegate.spec.model import Spec  # here: `--from`'s choices (KINDS) need no model

    if not isinstance(data, dict) or set(data) & set(Spec.model_fields):
        return "tunegate"
    hits = {name: (len(set(data) & dialect(name).markers), dialect(name).model_key in data) for name in DIALECTS}
    best = max(hits, key=lambda k: hits[k])
    return best if hits[best][0] else "tunegate"
