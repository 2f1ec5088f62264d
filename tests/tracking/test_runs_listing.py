"""list_runs: what `tunegate runs` prints, read from a real SQLite store in-process."""
from __future__ import annotations

import json

import pytest

from tests.support.tracking import EXPERIMENT, approved_record, base_spec, with_changes
from tunegate.errors import UsageError
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.runs import start_parent
from tunegate.tracking.runs_listing import list_runs, runs_target, ui_hint


def two_candidates(client) -> list[str]:
    parent = start_parent(client, EXPERIMENT, "flow-1")
    return [log_candidate(client, parent, approved_record(with_changes(base_spec(), lora={"r": r}),
                                                          val_loss=loss)).run_id for r, loss in ((4, 1.9), (8, 1.4))]


def test_the_text_is_the_table_then_how_to_open_it_in_the_mlflow_ui(client, store_uri):
    two_candidates(client)
    text = list_runs(None, store_uri, EXPERIMENT, None)
    assert text.startswith(f"experiment '{EXPERIMENT}': 2 candidate run(s) in 1 data group(s)\n")
    assert f"\nopen in the MLflow UI: mlflow ui --backend-store-uri {store_uri} --port 5000\n" in text


def test_the_json_is_one_document_without_the_ui_hint(client, store_uri):
    r4, r8 = two_candidates(client)
    doc = json.loads(list_runs(None, store_uri, EXPERIMENT, None, as_json=True))
    assert doc["experiment"] == EXPERIMENT
    assert [(r["run_id"], r["rank"]) for r in doc["groups"][0]["runs"]] == [(r8, 1), (r4, 2)]


def test_compared_runs_are_one_ranked_group(client, store_uri):
    r4, r8 = two_candidates(client)
    doc = json.loads(list_runs(None, store_uri, EXPERIMENT, [r4, r8], as_json=True))
    [group] = doc["groups"]
    assert [r["run_id"] for r in group["runs"]] == [r8, r4]
    assert group["validation_digest"] == approved_record().validation_digest


def test_a_missing_store_is_refused_and_not_created(tmp_path):
    with pytest.raises(UsageError, match="no MLflow store at"):
        runs_target(None, f"sqlite:///{tmp_path}/nothing.db", None)
    assert not (tmp_path / "nothing.db").exists()


def test_without_a_spec_or_name_the_experiment_is_tunegate(store_uri):
    assert runs_target(None, store_uri, None) == (store_uri, "tunegate")


def test_a_server_store_is_opened_by_its_url_without_its_password():
    hint = ui_hint("https://me:secret@mlflow.example.org/", None)
    assert hint == "\nopen in the MLflow UI: https://me:[REDACTED]@mlflow.example.org/\n"
