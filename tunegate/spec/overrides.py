"""A candidate's overrides applied to raw spec data: what every sweep candidate's spec is.

    data = apply_overrides(spec.raw, {"lora.r": 8, "training": {"learning_rate": 1e-4}})

The spec stage applies them to check a sweep's listed candidates (TG170, TG176) and the sweep to
write each candidate's spec, so both read an override the same way.
"""
from __future__ import annotations

import copy
from typing import Any

from tunegate.errors import UsageError

Overrides = dict[str, Any]  # dotted spec key (or section) -> value


def apply_overrides(data: dict[str, Any], overrides: Overrides) -> dict[str, Any]:
    """A deep copy of raw spec data with each dotted key set (`{"lora.r": 8}`).

    A mapping merges into the section it names (`{"lora": {"r": 16}}` keeps the spec's lora.alpha),
    as `{"lora.r": 16}` does: replacing the section would silently reset its other keys to defaults.
    """
    out = copy.deepcopy(data)
    for dotted, value in overrides.items():
        node = out
        *parents, leaf = str(dotted).split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UsageError(f"sweep override '{dotted}': '{part}' is not a section")
        node[leaf] = _merged(node.get(leaf), copy.deepcopy(value))
    return out


def _merged(old: Any, new: Any) -> Any:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return new
    return {**old, **{k: _merged(old.get(k), v) for k, v in new.items()}}
