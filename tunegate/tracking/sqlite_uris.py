"""SQLite tracking URIs built and read the way SQLAlchemy reads them, for every byte a folder name may hold.

    uri = sqlite_uri(Path("/runs/pct%41 q?x/mlflow.db"))   # 'sqlite:////runs/pct%2541 q%3Fx/mlflow.db'
    sqlite_path(uri)                                        # Path('/runs/pct%41 q?x/mlflow.db')

SQLAlchemy reads a `sqlite:///` URI as a URL, so a store whose path holds `%41` or `?` would open
another file (`%41` is `A`, the rest of the name after `?` its query). `sqlite_uri` quotes those two
and `sqlite_path` unquotes as SQLAlchemy does: a folder name with spaces, quotes, backslashes, `%`,
`#`, tabs, newlines, U+2028, a leading dash or escape sequences names the same file in every URI
built here (tunegate.tracking.store and the store template both build them here).
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

from tunegate.errors import UsageError

SQLITE = "sqlite:///"


def sqlite_uri(path: Path) -> str:
    """`sqlite:///` + an absolute path (four slashes in total on POSIX), with the two characters SQLAlchemy
    reads as URL syntax in it quoted: `%` (it unquotes `%41` to `A`) and `?` (a query starts there). Every
    other character is written as it is: MLflow makes the store's folder from the URI's text unquoted,
    so a fully quoted `a%20b` would leave an empty folder of that name beside the store."""
    name = os.fsencode(path.resolve())
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:  # SQLAlchemy decodes a URL's %XX as UTF-8: no URI reaches this file
        from tunegate.pathguard import shown

        raise UsageError(f"the MLflow store {shown(path)} has a name that is not UTF-8, which no SQLite URI can "
                         "reach; set tracking.mlflow_uri to a store elsewhere (or rename the folder)") from None
    return SQLITE + text.replace("%", "%25").replace("?", "%3F")


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI, or None for any other store (unquoted as SQLAlchemy does)."""
    if not uri.startswith(SQLITE):
        return None
    return Path(unquote(uri[len(SQLITE):].split("?", 1)[0], encoding="utf-8", errors="surrogateescape"))
