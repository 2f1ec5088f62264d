"""Where runs are tracked, and a store that survives many processes opening it at once."""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT, SUPPORT
from tests.support.tracking import EXPERIMENT, base_spec
from tunegate.errors import UsageError
from tunegate.tracking.runs import KIND, search_all, start_parent
from tunegate.tracking.store import (
    ALLOW_INSECURE_ENV,
    check_tracking_uri,
    ensure_experiment,
    ensure_store,
    open_client,
    resolve_tracking_uri,
    sqlite_uri,
)

WORKER = SUPPORT / "tracking_worker.py"


def _with_uri(uri: str | None):
    spec = base_spec()
    return spec.model_copy(update={"tracking": spec.tracking.model_copy(update={"mlflow_uri": uri})})


def test_default_uri_is_a_sqlite_file_beside_the_spec(tmp_path):
    uri = resolve_tracking_uri(base_spec(), tmp_path / "specs" / "run.yaml")
    assert uri == "sqlite:///" + str((tmp_path / "specs" / "mlflow.db").resolve())


def test_relative_sqlite_uri_resolves_against_the_spec_folder(tmp_path):
    uri = resolve_tracking_uri(_with_uri("sqlite:///stores/runs.db"), tmp_path / "run.yaml")
    assert uri == "sqlite:///" + str(tmp_path / "stores" / "runs.db")


def test_absolute_sqlite_and_https_uris_are_kept_as_written(tmp_path):
    assert resolve_tracking_uri(_with_uri("sqlite:////srv/mlflow.db"), tmp_path / "s.yaml") == "sqlite:////srv/mlflow.db"
    assert resolve_tracking_uri(_with_uri("https://mlflow.example.com"), tmp_path / "s.yaml") == \
        "https://mlflow.example.com"


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5000", "http://localhost:5000", "http://[::1]:5000"])
def test_plain_http_to_this_machine_is_allowed(uri):
    check_tracking_uri(uri)


def test_plain_http_to_another_machine_is_refused_with_the_override_named(tmp_path, monkeypatch):
    monkeypatch.delenv(ALLOW_INSECURE_ENV, raising=False)
    with pytest.raises(UsageError, match=f"refusing tracking URI http://10.1.2.3.*{ALLOW_INSECURE_ENV}=1"):
        resolve_tracking_uri(_with_uri("http://10.1.2.3:5000"), tmp_path / "s.yaml")


def test_the_override_env_allows_plain_http_to_another_machine(tmp_path, monkeypatch):
    monkeypatch.setenv(ALLOW_INSECURE_ENV, "1")
    assert resolve_tracking_uri(_with_uri("http://mlflow.lan:5000"), tmp_path / "s.yaml") == "http://mlflow.lan:5000"


def test_ensure_store_creates_a_working_store_and_is_idempotent(tmp_path):
    uri = sqlite_uri(tmp_path / "mlflow.db")
    ensure_store(uri)
    ensure_store(uri)
    client = open_client(uri)
    parent = start_parent(client, EXPERIMENT, "flow-a")
    assert client.get_run(parent).info.status == "RUNNING"


def test_experiment_artifacts_are_pinned_beside_the_store_not_the_working_directory(client, store_uri):
    experiment_id = ensure_experiment(client, EXPERIMENT, store_uri)
    location = client.get_experiment(experiment_id).artifact_location
    assert location == (Path(store_uri[len("sqlite:///"):]).parent / "mlartifacts").as_uri()


def test_ensure_experiment_returns_the_existing_experiment(client, store_uri):
    assert ensure_experiment(client, EXPERIMENT, store_uri) == ensure_experiment(client, EXPERIMENT, store_uri)


def test_an_out_of_date_store_is_backed_up_then_upgraded(store_template, tmp_path):
    import sqlalchemy
    from alembic import command
    from mlflow.store.db.utils import _get_alembic_config, _get_schema_version

    path = tmp_path / "old.db"
    shutil.copyfile(store_template, path)
    uri = sqlite_uri(path)
    engine = sqlalchemy.create_engine(uri)
    with engine.begin() as conn:  # roll the schema back one migration, as an older MLflow left it
        config = _get_alembic_config(uri)
        config.attributes["connection"] = conn
        command.downgrade(config, "-1")
    old = _get_schema_version(engine)
    ensure_store(uri)
    assert _get_schema_version(engine) != old
    backup = tmp_path / f"old.db.bak-{old}"
    assert backup.is_file()
    assert sqlite3.connect(backup).execute("select version_num from alembic_version").fetchone() == (old,)
    engine.dispose()
    assert open_client(uri).get_experiment("0") is not None


@pytest.mark.slow
def test_eight_processes_opening_a_fresh_store_at_once_all_succeed(tmp_path, monkeypatch):
    """Without the lock, all 8 fail in MLflow's migrations and the file stays broken (research finding 1)."""
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "cache"))  # no template: the migrations race
    uri = sqlite_uri(tmp_path / "fresh" / "mlflow.db")
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(WORKER), "init", uri, str(go), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
    deadline = time.monotonic() + 180
    while len(list(tmp_path.glob("go.*"))) < 8 and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()  # every worker has imported MLflow: they now race for the fresh file
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err[-800:] for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["FINISHED"] * 8
    client = open_client(uri)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    assert len(search_all(client, [experiment_id], f"tags.`{KIND}` = 'candidate'")) == 8
    assert client.get_run(start_parent(client, EXPERIMENT, "flow-after")).info.status == "RUNNING"


def test_importing_the_tracking_layer_loads_no_mlflow():
    code = ("import sys, tunegate.tracking, tunegate.cli.main; tunegate.cli.main.build_parser(); "
            "print(sorted(m for m in ('mlflow', 'matplotlib', 'prefect', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]"
