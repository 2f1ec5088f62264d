"""A candidate tunegate failed to evaluate is logged FAILED with verdict `error`, and a rerun retries it.

An error is not a verdict on the candidate: unlike a rejection, its run is never `complete`, so the
next sweep evaluates the candidate again and logs it into the same run (no second run).
"""
from __future__ import annotations

from tests.support.tracking import EXPERIMENT, approved_record
from tunegate.tracking import log_candidate, start_parent
from tunegate.tracking.runs import FAILURE_REASON, VERDICT, children, is_complete


def test_an_errored_candidate_ends_failed_with_its_reason_and_is_not_complete(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record().model_copy(update={"verdict": "error", "reason": "tunegate could not train it"})
    run = client.get_run(log_candidate(client, parent, record).run_id)
    assert run.info.status == "FAILED"
    assert run.data.tags[VERDICT] == "error"
    assert run.data.tags[FAILURE_REASON] == "tunegate could not train it"
    assert not is_complete(run)


def test_a_rerun_of_an_errored_candidate_logs_its_verdict_into_the_same_run(client):
    errored = approved_record().model_copy(update={"verdict": "error", "reason": "the trainer died"})
    first = log_candidate(client, start_parent(client, EXPERIMENT, "flow-1"), errored)
    parent = start_parent(client, EXPERIMENT, "flow-2")
    second = log_candidate(client, parent, approved_record())
    assert second.run_id == first.run_id
    run = client.get_run(second.run_id)
    assert (run.info.status, run.data.tags[VERDICT]) == ("FINISHED", "approved")
    assert is_complete(run) and FAILURE_REASON not in run.data.tags
    assert [r.info.run_id for r in children(client, parent)] == [first.run_id]
