"""A wing package's front door, loaded on first use (PEP 562).

    _HOME = {"validate_dataset": "tunegate.dataset.stage"}    # each name's module
    __getattr__ = front_door(__name__, _HOME)

Importing one module of a wing then loads that module alone, not the wing's front door and all it
imports (`tunegate.dataset.records` loaded 64 tunegate modules when every wing re-exported its
modules, 23 since). Imports nothing of ours: every wing may use it.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def front_door(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: a name of `homes` imported from its module on first use, then kept
    as a plain attribute of the package (hot loops that call it pay nothing more)."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
