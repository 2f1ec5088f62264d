"""Prefect's path settings made absolute for the local API's server (tunegate.local_api.setting_paths)."""
from __future__ import annotations

from tunegate.local_api.setting_paths import absolute_settings


def test_a_relative_home_and_path_settings_are_made_absolute_against_the_command_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"PREFECT_HOME": ".prefect", "PREFECT_PROFILES_PATH": "conf/profiles.toml",
           "PREFECT_LOGGING_LEVEL": "INFO", "HOME_PATH": "elsewhere"}
    assert absolute_settings(env) == {"PREFECT_HOME": str(tmp_path / ".prefect"),
                                      "PREFECT_PROFILES_PATH": str(tmp_path / "conf" / "profiles.toml")}


def test_absolute_and_home_relative_paths_are_left_as_they_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `~` means the same in the server, which has the command's HOME
    assert absolute_settings({"PREFECT_HOME": "/srv/prefect", "PREFECT_RESULTS_LOCAL_STORAGE_PATH": "~/results"}) == {}


def test_a_relative_sqlite_database_is_made_absolute_and_other_databases_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"PREFECT_API_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:///db/prefect.db?timeout=30",
           "PREFECT_SERVER_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:////srv/prefect.db",
           "PREFECT_X_DATABASE_CONNECTION_URL": "postgresql+asyncpg://u@host/prefect"}
    assert absolute_settings(env) == {
        "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{tmp_path}/db/prefect.db?timeout=30"}


def test_the_prefect_home_is_the_command_folders_when_relative_and_prefects_default_when_unset(tmp_path, monkeypatch):
    from tunegate.local_api.setting_paths import prefect_home

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert prefect_home({"PREFECT_HOME": "homes/a"}) == tmp_path / "homes" / "a"
    assert prefect_home({}) == tmp_path / "user" / ".prefect"
