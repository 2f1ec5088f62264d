"""Config dialects: other tools' training configs (axolotl, TRL, LLaMA-Factory), read as a tunegate spec.

    kind = detect_kind(located.data)                      # "axolotl", "trl", "llamafactory", or "tunegate"
    mapped = import_config(kind, located, "lora-1b.yml", folder)
    finding = translate(spec_finding, mapped)             # back at the original key and line

`registry.py` lists the dialects (one row each); each dialect is one module (`axolotl_dialect.py`,
`trl_dialect.py`, `llamafactory_dialect.py`) declaring a `Dialect`: its marker keys, its map
function, its fix wording, its docs page (a dialect's own helpers sit beside it: `axolotl_datasets.py`,
`llamafactory_datasets.py`, ...). The mapping machinery they share: `config_map.py` (the Dialect, the config being
mapped), `config_keys.py` (how the tool reads its keys), `unhonoured.py` (what tunegate's run
would do differently), `config_data.py` and `data_source.py` (the dataset files).

A new dialect is one module here plus its row in `registry.DIALECTS`: detection, `--from`,
`ParsedSpec.kind` and `translate` read the registry.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {**dict.fromkeys(["import_config", "name_original", "original_key", "translate", "translate_words"],
                        "tunegate.spec.importers.mapping"),
         **dict.fromkeys(["KINDS", "detect_kind", "dialect"], "tunegate.spec.importers.registry")}

__all__ = ["KINDS", "detect_kind", "dialect", "import_config", "name_original", "original_key", "translate",
           "translate_words"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
