"""A fresh Prefect home's database from the template a first start kept (tunegate.local_api.db_template).

The databases here are small SQLite files with the tables the checks read (a real migrated one is
made by tests/local_api/test_shared.py's server); the rules are about rows, not Prefect's schema.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tunegate.local_api.db_template import (CURRENT, EXISTING, EXTRA_ENTRYPOINTS, FRESH, SEEDED, catalogue_note,
                                            database_file, keep, prepare, seed, seeded_settings, template_path)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))


def _migrated(path: Path, **rows: int) -> Path:
    """A database shaped as one Prefect's first start leaves: its revision, its block catalogue."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE alembic_version (version_num TEXT)")
        for table in ("block_type", "configuration", "flow_run", "task_run"):
            db.execute(f"CREATE TABLE {table} (value TEXT)")
        db.execute("INSERT INTO alembic_version VALUES ('27d8f4e1a6c9')")
        for table, count in {"block_type": 3, **rows}.items():
            db.executemany(f"INSERT INTO {table} VALUES (?)", [(f"{table} {i}",) for i in range(count)])
    return path


def _rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_fresh_homes_database_is_the_kept_templates_copy(tmp_path):
    keep(_migrated(tmp_path / "first" / "prefect.db", configuration=1))
    home_db = tmp_path / "second" / "prefect.db"
    assert seed(home_db) == SEEDED
    assert _rows(home_db, "block_type") == 3 and _rows(home_db, "alembic_version") == 1
    assert _rows(home_db, "configuration") == 0  # Prefect's telemetry session is the home's own


def test_without_a_template_the_server_migrates_and_an_existing_database_is_left_alone(tmp_path):
    assert seed(tmp_path / "home" / "prefect.db") == FRESH
    existing = _migrated(tmp_path / "used" / "prefect.db", flow_run=2)
    keep(_migrated(tmp_path / "first" / "prefect.db"))
    assert seed(existing) == EXISTING and _rows(existing, "flow_run") == 2


def test_a_database_holding_a_commands_rows_is_never_kept(tmp_path):
    keep(_migrated(tmp_path / "first" / "prefect.db", flow_run=1))  # a command raced the first start
    assert not template_path().exists()
    assert seed(tmp_path / "home" / "prefect.db") == FRESH


def test_a_damaged_template_is_removed_and_not_copied(tmp_path):
    template_path().parent.mkdir(parents=True)
    template_path().write_bytes(b"not a database")
    assert seed(tmp_path / "home" / "prefect.db") == FRESH
    assert not template_path().exists() and not (tmp_path / "home" / "prefect.db").exists()


def test_only_prefects_default_database_is_seeded(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "run-folder"
    folder.mkdir()
    assert database_file({"PREFECT_HOME": str(home)}, folder) == home / "prefect.db"
    assert database_file({"PREFECT_HOME": str(home), "PREFECT_API_DATABASE_CONNECTION_URL": "postgresql://x"},
                         folder) is None
    (folder / "prefect.toml").write_text('[server.database]\nconnection_url = "postgresql://x"\n')
    assert database_file({"PREFECT_HOME": str(home)}, folder) is None


NO_MIGRATION = {"PREFECT_API_DATABASE_MIGRATE_ON_START": "false"}


def test_a_server_on_the_templates_copy_is_told_not_to_register_block_types_again_nor_to_check_whether_to():
    assert seeded_settings(SEEDED, {}) == {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
                                           "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false", **NO_MIGRATION}
    assert seeded_settings(FRESH, {}) == seeded_settings(EXISTING, {}) == {}  # migrations and registration as Prefect


def test_a_registration_setting_of_the_users_own_is_left_alone():
    assert seeded_settings(SEEDED, {"PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "true"}) == NO_MIGRATION
    assert seeded_settings(SEEDED, {"PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "true"}) == {
        "PREFECT_API_BLOCKS_REGISTER_ON_START": "false", **NO_MIGRATION}


def test_a_migration_setting_of_the_users_own_leaves_the_database_to_prefect(tmp_path):
    keep(_migrated(tmp_path / "first" / "prefect.db"))
    home, folder = tmp_path / "home", tmp_path / "run"
    assert _started_on(home, folder, PREFECT_SERVER_DATABASE_MIGRATE_ON_START="true") == (EXISTING, {})


def test_the_template_is_kept_per_set_of_modules_that_add_block_types(monkeypatch):
    plain = template_path()
    monkeypatch.setenv(EXTRA_ENTRYPOINTS, "my_company.prefect_blocks")
    assert template_path() != plain and template_path().parent == plain.parent


SKIPPED = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false", "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
           **NO_MIGRATION}  # what a start on a current database is spared: registration, its check, migrations


def _started_on(home: Path, folder: Path, **env: str) -> tuple[str, dict[str, str]]:
    """(the state a start on `home` found, the settings it was given); the server answered."""
    folder.mkdir(exist_ok=True)
    env = {"PREFECT_HOME": str(home), **env}
    given = dict(env)
    prepared = prepare(given, folder)
    prepared.started()
    return prepared.state, {k: v for k, v in given.items() if k not in env}


def test_a_restart_on_a_database_whose_catalogue_a_start_of_these_versions_registered_skips_registration(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "run"
    _migrated(home / "prefect.db", flow_run=2)  # a home in use: Prefect registers (or its check passes)
    assert _started_on(home, folder) == (EXISTING, {})
    assert catalogue_note(home / "prefect.db").read_text() == f"{template_path().name}\n27d8f4e1a6c9"
    assert _started_on(home, folder) == (CURRENT, SKIPPED)  # the shared API's restart after a break


def test_a_noted_database_put_back_at_another_revision_is_migrated_and_registered_as_prefect_does(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "run"
    _migrated(home / "prefect.db", flow_run=2)
    _started_on(home, folder)
    with sqlite3.connect(home / "prefect.db") as db:  # an older backup of it, say
        db.execute("UPDATE alembic_version SET version_num = '3a1f0c2b9d44'")
    assert _started_on(home, folder) == (EXISTING, {})
    assert _started_on(home, folder) == (CURRENT, SKIPPED)  # noted again once its start migrated it


def test_a_note_without_the_revision_is_written_again(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "run"
    _migrated(home / "prefect.db", flow_run=2)
    catalogue_note(home / "prefect.db").parent.mkdir(parents=True)
    catalogue_note(home / "prefect.db").write_text(template_path().name)  # as tunegate noted before session 49
    assert _started_on(home, folder) == (EXISTING, {})
    assert _started_on(home, folder) == (CURRENT, SKIPPED)


def test_a_note_of_other_versions_leaves_the_registration_to_prefect(tmp_path, monkeypatch):
    home, folder = tmp_path / "home", tmp_path / "run"
    _migrated(home / "prefect.db", flow_run=2)
    _started_on(home, folder)
    monkeypatch.setenv(EXTRA_ENTRYPOINTS, "my_company.prefect_blocks")  # a module that may add block types
    assert _started_on(home, folder) == (EXISTING, {})
    assert _started_on(home, folder) == (CURRENT, SKIPPED)  # noted again under the new set


def test_a_start_told_not_to_register_notes_no_catalogue(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "run"
    _migrated(home / "prefect.db", flow_run=2)
    assert _started_on(home, folder, PREFECT_SERVER_REGISTER_BLOCKS_ON_START="false") == (EXISTING, {})
    assert not catalogue_note(home / "prefect.db").exists()
    assert _started_on(home, folder) == (EXISTING, {})


def test_a_users_own_registration_check_setting_is_kept_on_a_noted_database(tmp_path):
    home, folder = tmp_path / "home", tmp_path / "run"
    _migrated(home / "prefect.db", flow_run=2)
    _started_on(home, folder)
    assert _started_on(home, folder, PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION="false") == (CURRENT, NO_MIGRATION)


def test_the_templates_copy_is_noted_current(tmp_path):
    keep(_migrated(tmp_path / "first" / "prefect.db"))
    home, folder = tmp_path / "home", tmp_path / "run"
    assert _started_on(home, folder) == (SEEDED, SKIPPED)
    assert _started_on(home, folder) == (CURRENT, SKIPPED)
