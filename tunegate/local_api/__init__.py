"""Prefect's local API for a tunegate command that runs a flow (sweep, preflight, launch), started
before the command imports Prefect, and dying with it.

    api = start_local_api()     # first: a uvicorn child starts, PREFECT_API_URL names it
    api = adopt_or_stop(api)    # once Prefect is imported: a server configured elsewhere wins
    ...                         # imports, the work that needs no API
    api.wait_ready()            # just before the flow's first call to the API

`child.py`: the uvicorn child and when it is used; `app.py`: what it serves, Prefect's API with a
request SQLite refused for a write conflict run again at once.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = dict.fromkeys(["LocalApi", "adopt_or_stop", "serving", "start_local_api"], "tunegate.local_api.child")

__all__ = ["LocalApi", "adopt_or_stop", "serving", "start_local_api"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
