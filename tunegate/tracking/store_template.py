"""A migrated, empty MLflow SQLite store kept once per MLflow version, copied for every fresh store.

    build_schema(tmp)        # a fresh store's tables: the template's copy, else MLflow's migrations

Why: MLflow builds a fresh SQLite store by creating its first tables and then running its Alembic
migrations, ~1,700 SQL statements that took 1.7 CPU s (7 s wall under load) of every sweep's
fixed cost on the 2-core machine. Those statements write the same schema every time for the same
MLflow, SQLAlchemy and SQLite, so the first creation keeps a copy of its result in the user
cache (`$TUNEGATE_CACHE/mlflow-store/`, default `~/.cache/tunegate`), named for those versions and
the schema revision, and every later creation copies it (tests/tracking/test_store_template.py
shows the copy identical in schema and rows to a migrated store, and usable).

The template is taken right after the migrations, before MLflow's first open adds its default
experiment (whose creation time must be the store's own). A template that is not a complete store
of the latest revision (a damaged cache) is removed and the migrations run instead. It is written
beside its final name and renamed into place, so a kill or a second process never leaves half a
template under that name.
"""
from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from tunegate.processes.mlflow_import import import_mlflow
from tunegate.user_cache import cache_root

TEMPLATE_DIR = "mlflow-store"


def template_path() -> Path:
    """The template's file for the installed MLflow, SQLAlchemy and SQLite, at MLflow's latest revision."""
    import_mlflow()
    import mlflow
    import sqlalchemy
    from mlflow.store.db.utils import _get_latest_schema_revision

    name = (f"mlflow-{mlflow.__version__}_sqlalchemy-{sqlalchemy.__version__}_"
            f"sqlite-{sqlite3.sqlite_version}_{_get_latest_schema_revision()}.db")
    return cache_root() / TEMPLATE_DIR / name


def build_schema(target: Path) -> None:
    """Give `target` (a new, absent file) MLflow's complete empty schema: a copy of the template when
    there is a good one, else MLflow's own migrations, whose result then becomes the template."""
    template = template_path()
    if _copy_if_complete(template, target):
        return
    _migrate(target)
    _keep(target, template)


def _migrate(target: Path) -> None:
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    from tunegate.tracking.sqlite_uris import sqlite_uri

    engine = sqlalchemy.create_engine(sqlite_uri(target))  # quoted: `%41` or `?` in a folder name is no URL syntax
    try:
        _initialize_tables(engine)
    finally:
        engine.dispose()


def _copy_if_complete(template: Path, target: Path) -> bool:
    """Copy the template to `target` through SQLite's backup API when it is a complete store."""
    if not template.is_file():
        return False
    try:
        with closing(sqlite3.connect(f"file:{template}?mode=ro", uri=True)) as source:
            if not _complete(source):
                raise sqlite3.DatabaseError("not a complete store")
            with closing(sqlite3.connect(target)) as copy:
                source.backup(copy)
        return True
    except sqlite3.Error:  # a damaged cache: never copy it; the migrations run and replace it
        target.unlink(missing_ok=True)
        template.unlink(missing_ok=True)
        return False


def _complete(db: sqlite3.Connection) -> bool:
    """The schema at MLflow's latest revision, every table MLflow declares, and no run."""
    from mlflow.store.db.base_sql_model import Base
    from mlflow.store.db.utils import _get_latest_schema_revision

    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not set(Base.metadata.tables) <= tables or "alembic_version" not in tables:
        return False
    versions = db.execute("SELECT version_num FROM alembic_version").fetchall()
    runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    return versions == [(_get_latest_schema_revision(),)] and runs == 0


def _keep(built: Path, template: Path) -> None:
    """Save a just-migrated store as the template (best effort: a read-only cache only costs speed)."""
    tmp = template.with_name(f".{template.name}.creating-{os.getpid()}")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(built)) as source, closing(sqlite3.connect(tmp)) as copy:
            source.backup(copy)
        os.replace(tmp, template)
    except (OSError, sqlite3.Error):
        tmp.unlink(missing_ok=True)
