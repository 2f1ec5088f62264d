"""Without PostgreSQL installed, the team-server tests skip and say how to get it (`.ci/run`)."""
from __future__ import annotations

import pytest

from tests.support import postgres_server
from tests.support.postgres_server import PostgresMlflow


def test_without_initdb_the_server_tests_skip_naming_ci_run(monkeypatch):
    monkeypatch.setattr(postgres_server, "pg_bin", lambda: None)
    with pytest.raises(pytest.skip.Exception, match=r"bash \.ci/run"), PostgresMlflow.start():
        pass


def test_debians_versioned_folder_is_found_when_initdb_is_off_path(monkeypatch, tmp_path):
    for version in ("13", "15"):
        (tmp_path / version / "bin").mkdir(parents=True)
        (tmp_path / version / "bin" / "initdb").write_text("")
    monkeypatch.setattr(postgres_server.shutil, "which", lambda name: None)
    assert postgres_server.pg_bin(tmp_path) == tmp_path / "15" / "bin"
