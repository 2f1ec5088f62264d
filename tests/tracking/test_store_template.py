"""A fresh store copied from the cached template is the store MLflow's migrations build, and usable.

One module-scoped pair: `migrated` is created with an empty cache (MLflow's migrations run and
their result becomes the template), `copied` is created next from that template. Both are read
straight from the file with sqlite3.
"""
from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.store_kill import store_state
from tests.support.tracking import EXPERIMENT
from tunegate.tracking.runs import start_parent
from tunegate.tracking.store import ensure_store, open_client, sqlite_uri
from tunegate.tracking.store_template import template_path

# Columns a store fills with the moment it was created (MLflow's default experiment): not schema.
CREATION_TIMES = {"creation_time", "last_update_time"}


def statements(uri: str) -> int:
    """How many SQL statements SQLAlchemy sends while `ensure_store(uri)` runs."""
    import sqlalchemy.event
    from sqlalchemy.engine import Engine

    sent = []

    def count(*_):
        sent.append(1)

    sqlalchemy.event.listen(Engine, "before_cursor_execute", count)
    try:
        ensure_store(uri)
    finally:
        sqlalchemy.event.remove(Engine, "before_cursor_execute", count)
    return len(sent)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TUNEGATE_CACHE", str(tmp_path_factory.mktemp("cache")))
        migrated = tmp_path_factory.mktemp("migrated") / "mlflow.db"
        copied = tmp_path_factory.mktemp("copied") / "mlflow.db"
        return {"migrated": migrated, "migrated_sent": statements(sqlite_uri(migrated)),
                "template": template_path(), "copied": copied, "copied_sent": statements(sqlite_uri(copied))}


def schema(path: Path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as db:
        pragmas = [(p, db.execute(f"PRAGMA {p}").fetchone()[0])
                   for p in ("user_version", "application_id", "page_size", "encoding", "auto_vacuum", "journal_mode")]
        return pragmas + sorted(db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(), key=repr)


def rows(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows, creation-time columns left out."""
    found = {}
    with closing(sqlite3.connect(path)) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [c[1] for c in db.execute(f'PRAGMA table_info("{table}")') if c[1] not in CREATION_TIMES]
            picked = ", ".join(f'"{c}"' for c in columns)
            found[table] = sorted(db.execute(f'SELECT {picked} FROM "{table}"').fetchall(), key=repr)
    return found


def test_the_first_fresh_store_runs_the_migrations_and_keeps_their_result_as_the_template(pair):
    assert pair["migrated_sent"] > 1000
    assert pair["template"].is_file() and pair["template"].parent.name == "mlflow-store"
    assert store_state(pair["template"]) == "complete"


def test_a_later_fresh_store_is_copied_from_the_template_without_migrations(pair):
    assert pair["copied_sent"] < 50  # the first open's checks and default experiment only


def test_the_copied_store_has_the_migrated_stores_schema_exactly(pair):
    assert schema(pair["copied"]) == schema(pair["migrated"])


def test_the_copied_store_holds_the_same_rows_as_the_migrated_one(pair):
    copied, migrated = rows(pair["copied"]), rows(pair["migrated"])
    assert copied == migrated
    assert copied["experiments"] and copied["alembic_version"]  # the default experiment and the revision


def test_the_copied_store_is_complete_and_takes_runs(pair):
    assert store_state(pair["copied"]) == "complete"
    client = open_client(sqlite_uri(pair["copied"]))
    run_id = start_parent(client, EXPERIMENT, "flow-on-a-copy")
    client.log_metric(run_id, "loss", 1.25, step=3)
    assert client.get_run(run_id).info.status == "RUNNING"
    assert [m.value for m in client.get_metric_history(run_id, "loss")] == [1.25]


def test_a_damaged_template_is_never_copied_and_is_rebuilt_by_the_migrations(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))
    template = template_path()
    template.parent.mkdir(parents=True)
    with closing(sqlite3.connect(template)) as db:  # a SQLite file, but not a store
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        db.commit()
    path = tmp_path / "mlflow.db"
    assert statements(sqlite_uri(path)) > 1000
    assert store_state(path) == "complete"
    assert store_state(template) == "complete"
