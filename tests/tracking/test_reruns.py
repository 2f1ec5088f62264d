"""One MLflow run per thing that happened, on a real SQLite store: a rerun of a preflight or a full run
is a run of its own that supersedes the earlier one (never an empty parent, never stale numbers),
and a rerun of a sweep continues its parent.

Each test opens sessions as the flows do (`tunegate.tracking.session`), on a copy of
tests/data/tracking (its spec, its data) beside the test's store.
"""
from __future__ import annotations

import shutil

import pytest

from tests.support.tracking import DATA, report, steps
from tunegate.spec.check import load_spec
from tunegate.tracking.runs import KIND, PARENT_TAG, SUPERSEDED_BY, children
from tunegate.tracking.runs_listing import list_runs
from tunegate.tracking.runs_table import candidate_rows, rank
from tunegate.tracking.session import close_session, finished_candidate, log_report, open_session
from tunegate.tracking.store import open_client


@pytest.fixture
def project(store_uri, tmp_path):
    """The tracking spec and its data beside the test's store (the spec's default mlflow.db)."""
    for name in ("spec.yaml", "train.jsonl", "validation.jsonl"):
        shutil.copyfile(DATA / name, tmp_path / name)
    return tmp_path / "spec.yaml"


def _session(project, flow_run: str, kind: str = "preflight", variant: str | None = None):
    approved = report("approved")
    digests = [approved.fingerprints[r]["digest"] for r in ("validation", "train")]
    return open_session(load_spec(project), project, flow_run, kind, lambda _: "COMPLETED", *digests, variant)


def _preflight(project, flow_run: str, eval_loss: float):
    session = _session(project, flow_run)
    logged = log_report(session, report("approved"), load_spec(project), kind="preflight", name="preflight spec",
                        mini_run_steps=steps(3), mini_run_eval_loss=eval_loss, trained_steps=3)
    close_session(session)
    return session, logged.run_id


def test_a_second_preflight_is_a_run_of_its_own_under_its_own_parent(project, store_uri):
    first_parent, first = _preflight(project, "flow-1", 2.5)
    second_parent, second = _preflight(project, "flow-2", 2.1)
    client = open_client(store_uri)
    assert first != second
    for session, run_id in ((first_parent, first), (second_parent, second)):  # no parent left empty
        assert [r.info.run_id for r in children(client, session.parent_run_id)] == [run_id]
    assert client.get_run(first).data.tags[SUPERSEDED_BY] == second
    assert SUPERSEDED_BY not in client.get_run(second).data.tags
    assert client.get_run(second).data.metrics["val/loss"] == 2.1  # the latest numbers, not the first's


def test_a_retry_inside_one_flow_run_logs_into_the_same_run(project, store_uri):
    session = _session(project, "flow-1")
    spec = load_spec(project)
    runs = {log_report(session, report("approved"), spec, kind="preflight", mini_run_steps=steps(3)).run_id
            for _ in range(2)}
    assert len(runs) == 1 and len(children(open_client(store_uri), session.parent_run_id)) == 1


def test_the_runs_table_lists_the_latest_first_and_marks_the_earlier_superseded(project, store_uri):
    _, first = _preflight(project, "flow-1", 2.5)
    _, second = _preflight(project, "flow-2", 2.1)
    rows = rank(candidate_rows(open_client(store_uri), "tunegate"))
    assert [r.run_id for r in rows] == [second, first]
    text = list_runs(None, store_uri, "tunegate", None)
    latest, earlier = (next(line for line in text.splitlines() if line.split()[1:2] == [r[:8]])
                       for r in (second, first))
    assert "superseded" not in latest and f"superseded by {second[:8]}" in earlier


def test_a_rerun_of_the_same_sweep_continues_its_parent(project, store_uri):
    first = _session(project, "flow-1", kind="sweep")
    close_session(first, candidates=0)
    again = _session(project, "flow-2", kind="sweep")
    assert again.parent_run_id == first.parent_run_id
    parents = [r for r in open_client(store_uri).search_runs(
        [open_client(store_uri).get_experiment_by_name("tunegate").experiment_id]) if r.data.tags[KIND] == "parent"]
    assert len(parents) == 1 and parents[0].info.status == "RUNNING"


def test_a_candidate_another_sweep_logged_moves_to_the_sweep_that_reuses_it(project, store_uri):
    client = open_client(store_uri)
    old = _session(project, "flow-1", kind="sweep", variant="list")
    logged = log_report(old, report("approved"), load_spec(project), kind="sweep candidate", val_loss=1.8)
    close_session(old, candidates=1)
    new = _session(project, "flow-2", kind="sweep", variant="grid")  # another sweep, the same candidate
    assert finished_candidate(new, logged.candidate_id)["run_id"] == logged.run_id
    assert client.get_run(logged.run_id).data.tags[PARENT_TAG] == new.parent_run_id
    emptied = client.get_run(old.parent_run_id)  # nothing left under it: superseded and deleted, not empty
    assert emptied.info.lifecycle_stage == "deleted" and emptied.data.tags[SUPERSEDED_BY] == new.parent_run_id
