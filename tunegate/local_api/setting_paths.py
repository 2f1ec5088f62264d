"""Prefect settings that name files, made absolute for the local API's server.

    env = {**os.environ, **absolute_settings(os.environ)}

Prefect reads a relative PREFECT_HOME (or any other path setting) against the folder the process
runs in. A shared server runs in its Prefect home's tunegate folder, not in the command's, so a
relative path passed on unchanged names another file there: `PREFECT_HOME=.prefect` made the
server look for `.prefect/tunegate/.prefect/prefect.db`, fail to open it and exit with code 3,
and the command stopped as an internal error. Each such setting is made absolute against the
command's folder, as the command's own Prefect reads it; the server's key (tunegate.local_api.state)
is taken from the absolute values, so one home named two ways is one server.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOME = "PREFECT_HOME"
_SQLITE = "sqlite"  # sqlite:///relative.db, sqlite+aiosqlite:///relative.db; four slashes: absolute


def absolute_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The PREFECT_ settings of `env` that hold a relative path, each made absolute against this
    process's folder (`~` expanded first, as Prefect expands it); the others are left out."""
    changed: dict[str, str] = {}
    for key, value in env.items():
        if not key.startswith("PREFECT_") or not value.strip():
            continue
        if key == HOME or key.endswith("_PATH"):  # PREFECT_PROFILES_PATH, ..._LOCAL_STORAGE_PATH, ...
            path = os.path.expanduser(value)
            if not os.path.isabs(path):
                changed[key] = os.path.abspath(path)
        elif key.endswith("DATABASE_CONNECTION_URL"):
            url = _absolute_sqlite(value)
            if url != value:
                changed[key] = url
    return changed


def prefect_home(env: Mapping[str, str]) -> Path:
    """The Prefect home `env` names (Prefect's default, ~/.prefect, when none), absolute."""
    return Path(os.path.abspath(os.path.expanduser(env.get(HOME) or "~/.prefect")))


def _absolute_sqlite(url: str) -> str:
    """A SQLite URL's relative file made absolute; any other URL (or an in-memory database) as it is."""
    scheme, sep, rest = url.partition(":///")
    if not sep or not scheme.split("+")[0] == _SQLITE or not rest or rest.startswith(("/", ":memory:")):
        return url
    path, query_sep, query = rest.partition("?")
    return f"{scheme}:///{os.path.abspath(os.path.expanduser(path))}{query_sep}{query}"
