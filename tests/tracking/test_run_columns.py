"""What a person reads in MLflow and `tunegate runs`: parents named for what they did, a run's duration
its training time, "trained" only for runs that trained, and the short ids the table prints accepted."""
from __future__ import annotations

import json
import time

import pytest

from tests.support.paths import EXAMPLES
from tests.support.tracking import EXPERIMENT, approved_record, base_spec, report, with_changes
from tunegate.errors import UsageError
from tunegate.spec.check import load_spec
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.record import record_from_report
from tunegate.tracking.runs import start_parent
from tunegate.tracking.runs_listing import list_runs
from tunegate.tracking.session import TrackingSession, close_session, parent_name


def test_parents_are_named_for_what_they_did():
    quickstart, sweep = load_spec(EXAMPLES / "quickstart.yaml"), load_spec(EXAMPLES / "sweep.yaml")
    assert parent_name("preflight", quickstart, EXAMPLES / "quickstart.yaml") == "preflight quickstart"
    assert parent_name("full-run", quickstart, EXAMPLES / "quickstart.yaml") == "full run quickstart"
    assert parent_name("sweep", sweep, EXAMPLES / "sweep.yaml") == "sweep support-v1"  # never "sweep sweep"


def test_a_closed_sweep_parent_says_how_many_candidates_it_considered(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-1", run_name="sweep support-v1")
    close_session(TrackingSession(uri=store_uri, experiment=EXPERIMENT, parent_run_id=parent,
                                  name="sweep support-v1"), candidates=3)
    assert client.get_run(parent).info.run_name == "sweep support-v1 3 candidates"


def test_a_runs_duration_is_its_training_time_and_a_metric_says_it_too(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    ended = time.time() - 30
    logged = log_candidate(client, parent, approved_record(train_seconds=12.5, trained_until=ended))
    run = client.get_run(logged.run_id)
    assert run.info.end_time - run.info.start_time == 12500
    assert run.info.end_time == int(ended * 1000)
    assert run.data.metrics["train/duration_s"] == 12.5


def test_only_a_run_that_trained_is_trained(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    trained = log_candidate(client, parent, approved_record(kind="sweep candidate", trained_steps=12)).run_id
    rejected = record_from_report(report("rejected"), with_changes(base_spec(), lora={"r": 4}),
                                  kind="sweep candidate", trained_steps=0)
    untrained = log_candidate(client, parent, rejected).run_id
    rows = {r["run_id"]: r for g in json.loads(list_runs(None, store_uri, EXPERIMENT, None, as_json=True))["groups"]
            for r in g["runs"]}
    assert rows[trained]["trained"] is True and rows[untrained]["trained"] is False
    table = list_runs(None, store_uri, EXPERIMENT, None).splitlines()
    row = next(line for line in table if untrained[:8] in line)
    assert " no " in row and " 20 st " not in row  # the spec's max_steps is a plan, not what it trained


def test_compare_takes_the_short_ids_the_table_prints(client, store_uri):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    ids = [log_candidate(client, parent, approved_record(with_changes(base_spec(), lora={"r": r}), val_loss=v)).run_id
           for r, v in ((4, 1.9), (8, 1.4))]
    table = list_runs(None, store_uri, EXPERIMENT, None)
    short = [i[:8] for i in ids]
    assert all(s in table for s in short)
    doc = json.loads(list_runs(None, store_uri, EXPERIMENT, short, as_json=True))
    assert [r["run_id"] for r in doc["groups"][0]["runs"]] == [ids[1], ids[0]]


def test_a_short_id_that_matches_nothing_is_a_usage_error_naming_it(client, store_uri):
    start_parent(client, EXPERIMENT, "flow-1")
    with pytest.raises(UsageError, match="'0000ffff' matches no run"):
        list_runs(None, store_uri, EXPERIMENT, ["0000ffff"])
