"""Where a SQLite store's runs write their artifacts: inside the store's own project, also after a copy.

    reroot(Path("copy/mlflow.db"))                 # ['experiment tunegate: /orig/mlartifacts -> /copy/mlartifacts']
    outside_project(Path("mlflow.db"), "tunegate")  # a warning, or None

MLflow keeps an experiment's artifact location, and every run's artifact URI, as absolute paths
in the store. tunegate pins them beside the store (`<project>/mlartifacts`), so a project copied or
moved with its `mlflow.db` used to keep writing into the ORIGINAL folder: a copy's sweep wrote its
run folders into the project it was copied from. So before a flow logs anything, a store whose
locations are tunegate's layout under another folder is re-rooted to its own (the experiment's
location and its runs' URIs, one transaction, under the store's lock); a location tunegate did
not make (a team share, a bucket) is never rewritten, and one on this machine outside the
project is a warning instead. Plain sqlite3: MLflow has no API to move an experiment.
"""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from urllib.parse import unquote, urlsplit

ARTIFACTS_DIR = "mlartifacts"
# Set on experiments tunegate creates: their location is tunegate's layout, beside the store.
ROOT_TAG = "tunegate.artifact_root"
ROOT_TAG_VALUE = "mlartifacts beside the store"


def local_path(location: str) -> Path | None:
    """The folder of a local artifact location (`file://` URI or absolute path); None for any other."""
    if location.startswith("file:"):
        return Path(unquote(urlsplit(location).path))
    if location.startswith("/"):
        return Path(location)
    return None


def reroot(db: Path) -> list[str]:
    """Point tunegate's artifact locations in store `db` that name another folder at `db`'s folder;
    return a line per experiment moved (nothing when the store never moved)."""
    home = (db.resolve().parent / ARTIFACTS_DIR)
    moved = []
    with closing(sqlite3.connect(db, timeout=30)) as conn, conn:
        tagged = {row[0] for row in conn.execute("SELECT experiment_id FROM experiment_tags WHERE key = ? "
                                                 "AND value = ?", (ROOT_TAG, ROOT_TAG_VALUE))}
        for exp_id, name, location in conn.execute("SELECT experiment_id, name, artifact_location FROM experiments"):
            old = local_path(location or "")
            if old is None or old == home or not _ours(old, exp_id in tagged):
                continue
            new = home.as_uri()
            conn.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?", (new, exp_id))
            for table, column in (("runs", "artifact_uri"), ("logged_models", "artifact_location")):
                conn.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) "  # noqa: S608 (our names)
                             f"WHERE experiment_id = ? AND substr({column}, 1, ?) = ?",
                             (new, len(location) + 1, exp_id, len(location), location))
            moved.append(f"experiment {name}: {old} -> {home}")
    return moved


def _ours(old: Path, tagged: bool) -> bool:
    """Whether `old` is tunegate's layout of a store that was copied or moved: `<folder>/mlartifacts`,
    made by tunegate (tagged), or, for stores from before the tag, a folder that is gone or still
    holds the store it was copied from."""
    if old.name != ARTIFACTS_DIR:
        return False
    return tagged or not old.parent.exists() or (old.parent / "mlflow.db").exists()


def outside_project(db: Path, experiment: str) -> str | None:
    """A warning when `experiment` in store `db` writes its artifacts on this machine outside the
    store's folder (and `reroot` would not move them); None when it does not, or cannot be read."""
    home = db.resolve().parent
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
            row = conn.execute("SELECT experiment_id, artifact_location FROM experiments WHERE name = ?",
                               (experiment,)).fetchone()
            tagged = row is not None and conn.execute(
                "SELECT 1 FROM experiment_tags WHERE experiment_id = ? AND key = ? AND value = ?",
                (row[0], ROOT_TAG, ROOT_TAG_VALUE)).fetchone() is not None
    except sqlite3.Error:
        return None
    path = local_path(row[1] or "") if row is not None else None
    if path is None or path.resolve().is_relative_to(home) or _ours(path, tagged):
        return None
    return (f"the MLflow store {db} keeps the artifacts of experiment '{experiment}' in {path}, outside its "
            f"project ({home}): this project's runs write there. Set tracking.experiment to a new name to "
            "keep them beside the store, or move that folder into the project.")
