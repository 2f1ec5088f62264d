"""What a sweep's candidates keep for each other in a folder: each copy written whole, a few kept.

    keep_whole(folder, key, body, most=2)   # folder/KEY.json, or nothing when the folder cannot hold it
    path = recently_used(folder, key)       # folder/KEY.json, touched: the last the folder lets go

The encoded splits (tunegate.fullrun.token_cache) and the token audit (tunegate.minirun.audit_cache)
are kept so: written aside and renamed into place, so a candidate reading meanwhile finds a copy
whole or none; the `most` most recently used copies stay, and a write a kill left half-done goes
after an hour.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

STALE_WRITE_NS = 3600 * 10**9  # a write aside this old was cut short by a kill


def keep_whole(folder: Path, key: str, body: bytes, most: int) -> None:
    """Write `body` as folder/KEY.json, whole or not at all; then let all but the `most` most
    recently used copies go."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        aside = folder / f".{key}.{os.getpid()}.{threading.get_ident()}"  # its own, whoever else writes the key
        aside.write_bytes(body)
        os.replace(aside, folder / f"{key}.json")
    except OSError:  # a folder that cannot hold it: the next candidate does the work again
        return
    _prune(folder, most)


def recently_used(folder: Path, key: str) -> Path:
    """The copy of `key` (it may not exist); touched when it does, so the folder lets it go last."""
    path = folder / f"{key}.json"
    try:
        os.utime(path)
    except OSError:
        pass
    return path


def _prune(folder: Path, most: int) -> None:
    try:
        entries = [(e.stat().st_mtime_ns, Path(e.path)) for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return
    copies = sorted((entry for entry in entries if not entry[1].name.startswith(".")), reverse=True)
    stale_since = time.time_ns() - STALE_WRITE_NS
    stale = copies[most:] + [entry for entry in entries if entry[1].name.startswith(".") and entry[0] < stale_since]
    for _, path in stale:
        path.unlink(missing_ok=True)
