"""Store paths are quoted wherever a SQLite URI is built, and a tracking URI is checked before use:
every byte a folder name may hold reaches the same file, and a URI that names no store is a usage
error (exit 2) before Prefect or MLflow start, never exit 3."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.hostile import BAD_URIS, STORE_NAMES, spec_with
from tests.support.tracking import EXPERIMENT, approved_record, base_spec, store_template  # noqa: F401 (fixture)
from tunegate.errors import UsageError
from tunegate.tracking.store import check_tracking_uri, resolve_tracking_uri, sqlite_path, sqlite_uri


@pytest.mark.parametrize("name", STORE_NAMES)
def test_a_sqlite_uri_names_the_same_file_whatever_its_folder_holds(name, tmp_path):
    from sqlalchemy.engine import make_url

    path = tmp_path / name / "mlflow.db"
    uri = sqlite_uri(path)
    assert sqlite_path(uri) == path.resolve() and make_url(uri).database == str(path.resolve())
    check_tracking_uri(uri)


def test_a_store_name_that_is_not_utf8_is_refused(tmp_path):
    with pytest.raises(UsageError, match="not UTF-8"):
        sqlite_uri(Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9/mlflow.db")))


@pytest.mark.parametrize("uri", BAD_URIS)
def test_a_uri_that_names_no_store_is_a_usage_error_naming_the_key(uri):
    with pytest.raises(UsageError, match="tracking.mlflow_uri"):
        check_tracking_uri(uri)


def test_a_relative_sqlite_uri_keeps_its_query_and_unquotes_its_name(tmp_path):
    spec = base_spec()
    spec = spec.model_copy(update={"tracking": spec.tracking.model_copy(
        update={"mlflow_uri": "sqlite:///my%20runs.db?timeout=30"})})
    uri = resolve_tracking_uri(spec, tmp_path / "s.yaml")
    assert uri.endswith("/my runs.db?timeout=30") and sqlite_path(uri) == tmp_path / "my runs.db"


@pytest.mark.parametrize("name", ["a b", "pct%41", "nl\nx", "esc\x1b[31mred", "qm?x", "-dash"])
def test_runs_lists_a_store_in_a_folder_with_any_name(name, store_template, tmp_path, capsys):  # noqa: F811
    from tunegate.cli.main import main
    from tunegate.tracking.candidate_log import log_candidate
    from tunegate.tracking.runs import start_parent
    from tunegate.tracking.store import open_client

    (tmp_path / name).mkdir()
    shutil.copyfile(store_template, tmp_path / name / "mlflow.db")
    uri = sqlite_uri(tmp_path / name / "mlflow.db")
    client = open_client(uri)
    log_candidate(client, start_parent(client, EXPERIMENT, "flow-1"), approved_record(base_spec(), val_loss=1.0))
    assert main(["runs", "--tracking-uri", uri, "--experiment", EXPERIMENT]) == 0
    assert "1 candidate run(s)" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["runs", "--spec"], ["preflight"], ["sweep"]], ids=" ".join)
@pytest.mark.parametrize("uri", ["/tmp/a-folder", "file:///tmp/mlruns", "garbage::://x", "sqlite:///a-folder",
                                 "http://127.0.0.1:9/"])
def test_a_bad_tracking_uri_stops_the_command_before_it_starts(command, uri, tmp_path, capsys):
    from tunegate.cli.main import main

    (tmp_path / "a-folder").mkdir()
    spec = spec_with(tmp_path, "tracking.mlflow_uri", uri)
    if command == ["sweep"]:
        spec.write_text(spec.read_text() + "sweep: {candidates: [{lora.r: 4}]}\n")
    code = main([*command, str(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err, err


def test_preflight_refuses_a_spec_path_prefect_cannot_carry(tmp_path, capsys):
    from tunegate.cli.main import main

    spec = spec_with(tmp_path, "lora.r", 8)
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/g\xe9.yaml"))
    spec.rename(odd)
    assert main(["preflight", str(odd)]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_a_fresh_store_is_migrated_in_a_folder_whose_name_looks_like_url_syntax(tmp_path, monkeypatch):
    from tunegate.tracking.store import ensure_store, open_client

    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "no-template-yet"))  # MLflow's own migrations run
    store = tmp_path / "pct%41 q?x#y" / "mlflow.db"
    ensure_store(sqlite_uri(store))
    assert store.is_file() and open_client(sqlite_uri(store)).search_experiments()
    assert not (tmp_path / "pctA q").exists()  # what `%41` and `?` would have named unquoted
