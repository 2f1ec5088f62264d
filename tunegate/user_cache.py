"""The user cache: what tunegate builds once and keeps between commands.

    root = cache_root()   # $TUNEGATE_CACHE, else ~/.cache/tunegate
    folder = cache_folder("tiny")   # made if missing; a UsageError naming the setting if it cannot be

Under it: the built-in tiny model (tunegate.training.tiny_model), MLflow's store template
(tunegate.tracking.store_template), Prefect's database template (tunegate.local_api.db_template)
and parameter counts (tunegate.estimate.meta_count). It imports only tunegate.errors, so the
lowest layer can read it. A cache that cannot be a folder (TUNEGATE_CACHE naming a file) is this
machine's setting, not the user's config: what needs the cache says so as a usage error, never as
a finding against the model or data the cache was to hold.
"""
from __future__ import annotations

import os
from pathlib import Path

from tunegate.errors import UsageError

CACHE_ENV = "TUNEGATE_CACHE"


def cache_root() -> Path:
    """$TUNEGATE_CACHE, else ~/.cache/tunegate."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tunegate")


def cache_folder(*parts: str, writable: bool = False) -> Path:
    """cache_root() / parts, made if missing (and, with `writable`, one this user may write in);
    UsageError naming where the root comes from if it cannot be."""
    root = cache_root()
    folder = root.joinpath(*parts)
    where = f"{CACHE_ENV}={root}" if os.environ.get(CACHE_ENV) else f"the cache folder {root} ({CACHE_ENV} unset)"
    fix = f"point {CACHE_ENV} at a folder tunegate may write in"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{where} is not a folder tunegate can use: {exc.strerror or exc} "
                         f"({exc.filename or folder}); {fix}") from None
    if writable and not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{where} is a folder this user cannot write in ({folder}); {fix}")
    return folder
