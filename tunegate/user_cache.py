"""The user cache: what tunegate builds once and keeps between commands.

    root = cache_root()   # $TUNEGATE_CACHE, else ~/.cache/tunegate

Under it: the built-in tiny model (tunegate.training.tiny_model), MLflow's store template
(tunegate.tracking.store_template), Prefect's database template (tunegate.local_api.db_template)
and parameter counts (tunegate.estimate.meta_count). A leaf: it imports nothing of ours, so the
lowest layer can read it.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "TUNEGATE_CACHE"


def cache_root() -> Path:
    """$TUNEGATE_CACHE, else ~/.cache/tunegate."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tunegate")
