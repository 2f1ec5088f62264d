"""A team's MLflow: candidates logged at once into an `mlflow server` on PostgreSQL, as into the SQLite default.

The module starts a throwaway PostgreSQL cluster and an mlflow server on it (tests/support/
postgres_server.py), opens a flow run's tracking session on `http://127.0.0.1:<port>` as the flows
do, logs two candidates from two threads (a sweep's `max_parallel: 2`, without the training:
tests/tracking/test_postgres_sweep.py runs the whole sweep through the CLI, nightly), closes the
session, reads everything back through the server and from PostgreSQL, then stops both servers.
"""
from __future__ import annotations

import contextlib
import io
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.postgres_server import PostgresMlflow, read_back, run_inputs_in_postgres, runs_in_postgres
from tests.support.tracking import DATA, approved_record, base_spec, with_changes
from tunegate.tracking import log_candidate, open_client
from tunegate.tracking.session import close_session, open_session

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
EXPERIMENT = "team"


def _log_two_at_once(uri: str) -> dict[str, Any]:
    """A flow run's session on the server, two candidates logged from two threads, the session closed."""
    spec = with_changes(base_spec(), tracking={"mlflow_uri": uri, "experiment": EXPERIMENT})
    records = [approved_record(with_changes(spec, lora={"r": r}), val_loss=loss) for r, loss in ((4, 1.9), (8, 1.7))]
    session = open_session(spec, DATA / "spec.yaml", "flow-team-1", "sweep", lambda _: None,
                           validation_digest=records[0].validation_digest)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda r: log_candidate(open_client(session.uri), session.parent_run_id, r), records))
    best = close_session(session)
    return {"session": session, "results": results, "best": best,
            "candidate_ids": {r.candidate_id for r in records}}


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("team-store")
    printed = io.StringIO()
    with PostgresMlflow.start() as server:
        with contextlib.redirect_stdout(printed):
            logged = _log_two_at_once(server.uri)
        found = {**logged, "printed": printed.getvalue(), **read_back(server.uri, EXPERIMENT, root),
                 "pg_runs": runs_in_postgres(server, EXPERIMENT), "pg_inputs": run_inputs_in_postgres(server)}
    found.update(leftovers=server.leftovers(), server_root=server.root)
    return found


def _candidates(team: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in team["runs"] if r["tags"].get("tunegate.kind") == "candidate"]


def test_both_candidates_and_the_parent_are_on_the_server(team):
    parents = [r for r in team["runs"] if r["tags"].get("tunegate.kind") == "parent"]
    assert [p["id"] for p in parents] == [team["session"].parent_run_id]
    assert {r["tags"]["tunegate.candidate_id"] for r in _candidates(team)} == team["candidate_ids"]
    assert {r["tags"]["mlflow.parentRunId"] for r in _candidates(team)} == {team["session"].parent_run_id}
    assert [r.status for r in team["results"]] == ["FINISHED", "FINISHED"]


def test_each_candidate_has_its_verdict_val_loss_and_both_datasets(team):
    for run in _candidates(team):
        assert run["tags"]["tunegate.verdict"] == "approved"
        assert run["metrics"]["val/loss"] in (1.9, 1.7)
        digests = {tags["mlflow.data.context"]: tags["tunegate.digest"] for tags in run["inputs"]}
        assert sorted(digests) == ["training", "validation"]
        assert digests["validation"] == run["tags"]["tunegate.validation_digest"]


def test_the_best_candidate_is_the_lowest_val_loss(team):
    by_loss = {r["metrics"]["val/loss"]: r["id"] for r in _candidates(team)}
    assert team["best"] == by_loss[1.7]


def test_the_artifacts_are_served_by_the_server(team):
    # proxied through the server (mlflow-artifacts:), not a path on the client's disk
    assert team["artifact_location"].startswith("mlflow-artifacts:")
    for run in _candidates(team):
        assert {"report.json", "report.md", "loss_curve.svg"} <= set(run["artifacts"])
        assert run["report"]["approved_for_full_run"] is True


def test_no_run_is_left_running(team):
    assert [r["id"] for r in team["runs"] if r["status"] == "RUNNING"] == []


def test_the_runs_and_their_inputs_are_rows_in_postgresql(team):
    assert team["pg_runs"] == {"FINISHED": 3}  # the parent and both candidates
    assert team["pg_inputs"] >= 4  # two datasets per candidate


def test_mlflow_prints_nothing_on_stdout(team):
    # its "View run ... at: <url>" lines, printed for a server store, broke `tunegate sweep --json`
    assert team["printed"] == ""


def test_stopping_leaves_no_postgres_or_mlflow_process(team):
    assert team["leftovers"] == []
    assert not team["server_root"].exists()
