"""A kill at any point of a fresh store's creation leaves no store or a complete one, never a brick.

Before: killed at 63 of its migration statements, 45 points left `mlflow.db` half-migrated and every
later run failed on it. The creation now builds the schema in a file beside the store and renames
it into place, so the scan kills it (SIGKILL, in a forked child, tests/support/store_kill.py):
- recording which file each of its ~1,700 SQL statements goes to, to show that none before the
  rename touches the store's path (so a kill at any of them leaves the path absent);
- for real at a stride of those statements, each time finding no store and a rerun that works;
- for real at every statement after the rename (each one on a copy of the store as the rename
  left it), each time finding a complete store that a rerun opens and logs to.
The whole brute-force scan, against MLflow's own creation as the baseline, is
benchmarks/store_kill_scan.py.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.store_kill import create_store, store_state
from tunegate.tracking.runs import start_parent
from tunegate.tracking.store import ensure_store, open_client, sqlite_uri

STRIDE = 150  # kills before the rename: one every STRIDE statements


@pytest.fixture(autouse=True)
def no_template(tmp_path, monkeypatch):
    """An empty cache for each test: its creations run MLflow's migrations, which the kills cut
    (a cached template would make them a copy; tests/tracking/test_store_template.py)."""
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))


def usable(path: Path) -> bool:
    """A rerun creates (or opens) the store and logs a run to it."""
    uri = sqlite_uri(path)
    ensure_store(uri)
    client = open_client(uri)
    run_id = start_parent(client, "kill-scan", "flow-after-kill")
    return client.get_run(run_id).info.status == "RUNNING" and store_state(path) == "complete"


@pytest.fixture(scope="module")
def targets(tmp_path_factory) -> list[str]:
    """The file name each statement of one uninterrupted creation went to, in order."""
    import sqlalchemy.event
    from sqlalchemy.engine import Engine

    sent: list[str] = []

    def record(conn, *_):
        sent.append(Path(conn.engine.url.database).name)

    sqlalchemy.event.listen(Engine, "before_cursor_execute", record)
    try:
        with pytest.MonkeyPatch.context() as mp:  # an empty cache: the creation migrates
            mp.setenv("TUNEGATE_CACHE", str(tmp_path_factory.mktemp("cache")))
            ensure_store(sqlite_uri(tmp_path_factory.mktemp("whole") / "mlflow.db"))
    finally:
        sqlalchemy.event.remove(Engine, "before_cursor_execute", record)
    return sent


def test_a_kill_midway_leaves_no_store_and_the_rerun_builds_a_complete_one(tmp_path):
    path = tmp_path / "mlflow.db"
    assert create_store(sqlite_uri(path), kill_at=300) is None  # killed in the migrations
    assert store_state(path) == "absent"
    assert usable(path)
    assert not list(tmp_path.glob(".mlflow.db.creating-*"))  # the killed creation's file is removed


@pytest.mark.slow
def test_no_statement_before_the_rename_touches_the_store(targets):
    first = targets.index("mlflow.db")
    assert first > 1000 and set(targets[first:]) == {"mlflow.db"}
    assert all(name.startswith(".mlflow.db.creating-") for name in targets[:first])


@pytest.mark.slow
def test_a_kill_at_a_stride_of_the_migration_statements_leaves_no_store(targets, tmp_path):
    first = targets.index("mlflow.db")
    points = list(range(1, first + 1, STRIDE)) + [first]  # `first`: after the last migration, before the rename
    for k in points:
        path = tmp_path / f"kill-{k}" / "mlflow.db"
        assert create_store(sqlite_uri(path), kill_at=k) is None, k
        assert store_state(path) == "absent", k
    assert usable(tmp_path / f"kill-{points[-1]}" / "mlflow.db")


@pytest.mark.slow
def test_a_kill_at_every_statement_after_the_rename_leaves_a_complete_store(targets, tmp_path):
    first = targets.index("mlflow.db")
    renamed = tmp_path / "renamed" / "mlflow.db"
    assert create_store(sqlite_uri(renamed), kill_at=first + 1) is None  # killed just after the rename
    assert store_state(renamed) == "complete"
    for j in range(1, len(targets) - first + 1):  # replay the rest from the store as the rename left it
        path = tmp_path / f"after-{j}" / "mlflow.db"
        path.parent.mkdir()
        shutil.copyfile(renamed, path)
        assert create_store(sqlite_uri(path), kill_at=j) is None, j
        assert store_state(path) == "complete", j
        assert usable(path), j


def test_a_store_an_older_tunegate_left_half_migrated_is_set_aside_and_rebuilt(tmp_path):
    path = tmp_path / "mlflow.db"
    # As tunegate used to create it (MLflow's own first open), killed in the middle of the migrations.
    assert create_store(sqlite_uri(path), kill_at=750, mlflow_alone=True) is None
    assert store_state(path).startswith("missing tables")
    assert usable(path)
    (broken,) = tmp_path.glob("mlflow.db.broken-*")
    assert store_state(broken).startswith("missing tables")  # kept, not deleted
