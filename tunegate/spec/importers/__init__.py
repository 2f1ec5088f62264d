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

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {**dict.fromkeys(["import_config", "name_original", "original_key", "translate", "translate_words"],
                        "tunegate.spec.importers.mapping"),
         **dict.fromkeys(["KINDS", "detect_kind", "dialect"], "tunegate.spec.importers.registry")}

__all__ = ["KINDS", "detect_kind", "dialect", "import_config", "name_original", "original_key", "translate",
           "translate_words"]
__getattr__ = front_door(__name__, _HOME)
