"""A copied or moved project writes only inside itself: its store's artifact locations follow it, and a
location outside the project that tunegate did not make is a warning, never rewritten."""
from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing

import pytest

from tests.support.tracking import EXPERIMENT, approved_record
from tunegate.tracking.artifact_root import ROOT_TAG, outside_project
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.runs import start_parent
from tunegate.tracking.store import ensure_store, open_client, sqlite_uri


def _project_with_a_run(folder, store_template):
    folder.mkdir()
    shutil.copyfile(store_template, folder / "mlflow.db")
    client = open_client(sqlite_uri(folder / "mlflow.db"))
    log_candidate(client, start_parent(client, EXPERIMENT, "flow-1"), approved_record())
    return client


def _files(folder):
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("made_by", ["this tunegate", "a tunegate before the tag"])
def test_a_copied_project_logs_its_new_runs_inside_the_copy(tmp_path, store_template, made_by):
    original = tmp_path / "original"
    _project_with_a_run(original, store_template)
    if made_by != "this tunegate":  # a store from before experiments carried tunegate.artifact_root
        with closing(sqlite3.connect(original / "mlflow.db")) as conn, conn:
            conn.execute("DELETE FROM experiment_tags WHERE key = ?", (ROOT_TAG,))
    before = _files(original / "mlartifacts")
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    ensure_store(sqlite_uri(copy / "mlflow.db"))  # what every flow does first
    client = open_client(sqlite_uri(copy / "mlflow.db"))
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment.artifact_location == (copy / "mlartifacts").resolve().as_uri()
    old_run = client.search_runs([experiment.experiment_id])[0]
    assert old_run.info.artifact_uri.startswith((copy / "mlartifacts").resolve().as_uri())
    assert client.list_artifacts(old_run.info.run_id)  # the copied run's artifacts are found in the copy
    new = log_candidate(client, start_parent(client, EXPERIMENT, "flow-2"), approved_record(val_loss=1.5, salt="2"))
    assert new.status == "FINISHED"
    assert _files(original / "mlartifacts") == before  # nothing written into the original
    assert any(new.run_id in str(p) for p in _files(copy / "mlartifacts"))


def test_a_moved_project_is_rerooted_too(tmp_path, store_template):
    _project_with_a_run(tmp_path / "before", store_template)
    (tmp_path / "before").rename(tmp_path / "after")
    ensure_store(sqlite_uri(tmp_path / "after" / "mlflow.db"))
    found = open_client(sqlite_uri(tmp_path / "after" / "mlflow.db")).get_experiment_by_name(EXPERIMENT)
    assert found.artifact_location == (tmp_path / "after" / "mlartifacts").resolve().as_uri()


def test_a_location_tunegate_did_not_make_is_a_warning_and_left_as_it_is(tmp_path, store_template):
    _project_with_a_run(tmp_path / "project", store_template)
    shared = (tmp_path / "team-share").as_uri()
    db = tmp_path / "project" / "mlflow.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE experiments SET artifact_location = ? WHERE name = ?", (shared, EXPERIMENT))
    ensure_store(sqlite_uri(db))
    assert open_client(sqlite_uri(db)).get_experiment_by_name(EXPERIMENT).artifact_location == shared
    warning = outside_project(db, EXPERIMENT)
    assert warning and str(tmp_path / "team-share") in warning and "outside its project" in warning


def test_a_store_writing_beside_itself_has_no_warning(tmp_path, store_template):
    _project_with_a_run(tmp_path / "project", store_template)
    assert outside_project(tmp_path / "project" / "mlflow.db", EXPERIMENT) is None


def test_the_flow_commands_say_it_before_they_start(tmp_path, store_template, capsys):
    from tests.support.tracking import DATA
    from tunegate.cli.flow_runner import warn_store_outside
    from tunegate.spec.check import load_spec

    _project_with_a_run(tmp_path / "project", store_template)
    for name in ("spec.yaml", "train.jsonl", "validation.jsonl"):
        shutil.copyfile(DATA / name, tmp_path / "project" / name)
    spec_path = tmp_path / "project" / "spec.yaml"
    with closing(sqlite3.connect(tmp_path / "project" / "mlflow.db")) as conn, conn:
        conn.execute("UPDATE experiments SET artifact_location = ? WHERE name = ?",
                     ((tmp_path / "elsewhere").as_uri(), EXPERIMENT))
    spec = load_spec(spec_path)
    tracking = spec.tracking.model_copy(update={"experiment": EXPERIMENT})
    warn_store_outside(spec.model_copy(update={"tracking": tracking}), str(spec_path))
    assert "tunegate: warning: the MLflow store" in capsys.readouterr().err
