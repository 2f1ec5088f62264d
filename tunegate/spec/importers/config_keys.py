"""How the tool reads a config's keys: values of the wrong type, keys it needs, keys it refuses,
keys set together that it refuses together, and unknown keys that look like typos of mapped ones.

Each code here is produced by one function that every dialect calls with its own words:

    wrong_type(cmap, "val_set_size", "abc", "a number (a share ...)", "Set val_set_size: 0 ...")  # TG102
    conflicting(cmap, "fp16", "bf16 and fp16 are both true", "Keep one of them.")                  # TG149
    required(cmap, "base_model", "axolotl cannot train without it", "Set base_model ...")         # TG152
    refused_by_tool(cmap, "max_seq_length", "max_seq_length is SFTConfig's old name ...", "...")   # TG154
    typos(cmap, mapped_keys, real_near)                                                            # TG155
"""
from __future__ import annotations

import difflib
from typing import Any

from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.schema_errors import WRONG_TYPE


def wrong_type(cmap: ConfigMap, key: str, value: Any, reads_as: str, hint: str) -> None:
    """TG102 at `key` (its last part named): the tool reads it as `reads_as`, which `value` is not."""
    cmap.note(WRONG_TYPE, "error", key, f"{key.rpartition('.')[2]} is {value!r}; {cmap.kind} reads it as "
              f"{reads_as}", hint)


def text(cmap: ConfigMap, key: str, value: Any, default: str) -> str | None:
    """`value` (read at `key`) when it is text, `default` when it is absent; otherwise TG102 at the
    key, and None: the tools read these keys as names."""
    if value is None:
        return default
    if isinstance(value, str):
        return value
    name = key.rpartition(".")[2]  # the finding's key says where: datasets.0.split
    wrong_type(cmap, key, value, "a name (text)", f"Write {name} as one name, e.g. {name}: {default}.")
    return None


def conflicting(cmap: ConfigMap, key: str, message: str, hint: str) -> None:
    """TG149 at `key`: it is set together with a key the tool takes instead of it (both true, both set)."""
    cmap.note("TG149", "error", key, message, hint)


def required(cmap: ConfigMap, key: str, consequence: str, hint: str) -> None:
    """TG152: `key` is not set, and the tool cannot run without it (`consequence` says what happens)."""
    cmap.note("TG152", "error", None, f"{key} is not set; {consequence}", hint)


def refused_by_tool(cmap: ConfigMap, key: str, message: str, hint: str) -> None:
    """TG154 at `key`: the tool itself refuses the config as written (`message` quotes its words)."""
    cmap.note("TG154", "error", key, message, hint)


def typos(cmap: ConfigMap, mapped: set[str], real_near: frozenset[str]) -> set[str]:
    """TG155 for each key no mapping read that is one edit or two from a key tunegate maps, unless it
    is one of the tool's own keys (`real_near`); the keys they were meant to be (a missing required
    key is then said once, here)."""
    meant: set[str] = set()
    for key in cmap.source:
        if key in cmap.used or key in real_near or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, sorted(mapped), n=1, cutoff=0.8)
        if close and close[0] not in cmap.source:
            cmap.used.add(key)
            meant.add(close[0])
            cmap.note("TG155", "error", key, f"unknown key '{key}': {cmap.dialect.ignores_unknown}",
                      f"Did you mean '{close[0]}'? Rename the key ({cmap.dialect.docs} lists the keys tunegate "
                      "maps).")
    return meant


def as_written(value: Any) -> str:
    """A config value as a finding quotes it: YAML's true/false, a quoted string, anything else as it prints."""
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)
