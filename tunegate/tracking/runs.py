"""The run tree: one parent run per flow run, one child per candidate, both found again on a rerun.

Prefect tasks are at-least-once (a task killed before its result was persisted runs again), so
opening a run must be idempotent: the parent is keyed by the flow run id, a candidate by its
stable candidate id, and a rerun finds and reuses the run instead of adding one. Everything goes
through an explicit `MlflowClient`; MLflow's fluent active run is thread-local, and Prefect runs
submitted tasks in other threads.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from tunegate.tracking.store import ensure_experiment, sqlite_path

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

PARENT_TAG = "mlflow.parentRunId"  # the tag MLflow's UI nests runs by
KIND = "tunegate.kind"  # "parent" or "candidate"
FLOW_RUN_ID = "tunegate.flow_run_id"
CANDIDATE_ID = "tunegate.candidate_id"
VALIDATION_DIGEST = "tunegate.validation_digest"
TRAIN_DIGEST = "tunegate.train_digest"
VAL_SCOPE = "tunegate.val_scope"
VERDICT = "tunegate.verdict"
APPROVED = "tunegate.approved_for_full_run"
NOT_RUN = "tunegate.gates_not_run"
CAVEATS = "tunegate.caveats"
FAILING_CODES = "tunegate.failing_codes"
PRUNED_AT = "tunegate.pruned_at_step"  # a candidate its sweep's pruning rule stopped: the step, and
STEPS_SAVED = "tunegate.steps_saved"  # the steps of its budget that were not trained
FAILURE_REASON = "tunegate.failure_reason"
KILLED_REASON = "tunegate.killed_reason"
BEST_RUN = "tunegate.best_run"
REOPENED_FROM = "tunegate.reopened_from_parent"
# What a parent is found again by: its flow run (a preflight, a full run: a retry lands in the same
# parent) or, for a sweep, the sweep itself (its spec and data: a rerun continues it).
RUN_KEY = "tunegate.run_key"
# A preflight or full run of the same spec, data and kind as an earlier one: the newer supersedes it.
LINEAGE = "tunegate.lineage"
SUPERSEDED_BY = "tunegate.superseded_by"
CONTINUED_FROM = "tunegate.continued_from"  # a reopened parent: the flow run before, and how it ended
# Set after a candidate's run was fully logged and ended. Status alone cannot say so: a fluent
# `mlflow.start_run(run_id=...)` block (e.g. around the HF Trainer) ends a run FINISHED on exit.
COMPLETE = "tunegate.complete"


class CandidateRun(BaseModel):
    """The child run a candidate logs into."""

    run_id: str
    reused: bool = False
    previous_status: str | None = None
    complete: bool = Field(False, description="Fully logged and ended before: nothing to redo.")


def search_all(client: MlflowClient, experiment_ids: list[str], filter_string: str = "") -> list[Run]:
    """Every active run matching `filter_string`, across pages, oldest first."""
    runs, token = [], None
    while True:
        page = client.search_runs(experiment_ids, filter_string, max_results=1000,
                                  order_by=["attributes.start_time ASC"], page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@contextmanager
def store_lock(client: MlflowClient) -> Iterator[None]:
    """Serialise find-or-create on a SQLite store across processes; a server store relies on
    `_dedupe` after creating instead (there is no shared file to lock)."""
    path = sqlite_path(client.tracking_uri)
    if path is None:
        yield
        return
    from filelock import FileLock

    with FileLock(str(path) + ".runs.lock", timeout=60):
        yield


def start_parent(client: MlflowClient, experiment: str, flow_run_id: str,
                 tags: dict[str, str] | None = None, validation_digest: str | None = None,
                 run_name: str | None = None, train_digest: str | None = None, key: str | None = None) -> str:
    """Open (or reopen) the parent run of `key` (default: flow run `flow_run_id`); return its run id.

    A Prefect flow retry keeps its flow run id, so the retry lands in the same parent run; a sweep
    passes its own key, so a rerun of the same sweep continues its parent instead of leaving an
    empty one. The digests are the data the flow run's candidates are ranked on (a candidate on
    other data is logged, but not ranked against them).
    """
    experiment_id = ensure_experiment(client, experiment, client.tracking_uri)
    key = key or flow_run_id
    wanted = {KIND: "parent", FLOW_RUN_ID: flow_run_id, RUN_KEY: key, **(tags or {})}
    if validation_digest:
        wanted[VALIDATION_DIGEST] = validation_digest
    if train_digest:
        wanted[TRAIN_DIGEST] = train_digest
    filter_string = f"tags.`{KIND}` = 'parent' and tags.`{RUN_KEY}` = {_quote(key)}"
    with store_lock(client):
        found = search_all(client, [experiment_id], filter_string)
        if not found:
            run = client.create_run(experiment_id, tags=wanted, run_name=run_name or f"flow-{flow_run_id[:12]}")
            found = _dedupe(client, experiment_id, filter_string, run.info.run_id)
    run = found[0]
    if run.info.status != "RUNNING":  # reopened (a retry, a rerun of the sweep): its last ending no longer holds
        _continue(client, run, flow_run_id)
    for key, value in wanted.items():
        if run.data.tags.get(key) != value:
            client.set_tag(run.info.run_id, key, value)
    return run.info.run_id


def _continue(client: MlflowClient, run: Run, flow_run_id: str) -> None:
    """Reopen an ended parent for this flow run, saying how the earlier one ended (`continued_from`)."""
    tags = run.data.tags
    why = tags.get(KILLED_REASON) or tags.get(FAILURE_REASON)
    previous = tags.get(FLOW_RUN_ID)
    if previous and previous != flow_run_id:
        client.set_tag(run.info.run_id, CONTINUED_FROM, f"flow run {previous}, which ended {run.info.status}"
                                                        + (f": {why}" if why else "")[:4000])
    for stale in (FAILURE_REASON, KILLED_REASON):
        if stale in tags:
            client.delete_tag(run.info.run_id, stale)
    client.update_run(run.info.run_id, status="RUNNING")


def _dedupe(client: MlflowClient, experiment_id: str, filter_string: str, mine: str) -> list[Run]:
    """After creating: if a concurrent attempt created a twin, keep the oldest and delete ours."""
    found = search_all(client, [experiment_id], filter_string)
    if len(found) > 1 and found[0].info.run_id != mine:
        client.delete_run(mine)
    return found[:1]


def find_candidate_run(client: MlflowClient, experiment_id: str, cid: str) -> Run | None:
    """The candidate's run in this experiment, if any (see `is_complete`)."""
    found = search_all(client, [experiment_id], f"tags.`{CANDIDATE_ID}` = {_quote(cid)}")
    return found[0] if found else None


def open_candidate_run(client: MlflowClient, parent_run_id: str, cid: str,
                       run_name: str | None = None, start_time_ms: int | None = None) -> CandidateRun:
    """Find or create the child run of candidate `cid` under `parent_run_id`.

    A candidate is one run per experiment (same params, same data => same candidate). A complete
    run (fully logged, FINISHED or FAILED by its verdict) is returned untouched. An incomplete one
    (RUNNING from a dead flow, KILLED, or a logging attempt that broke) is reopened under the
    current parent, since that parent now redoes it. A new run starts at `start_time_ms` (when
    what it records began: MLflow shows end - start as its duration), default now.
    """
    parent = client.get_run(parent_run_id)
    experiment_id = parent.info.experiment_id
    flow_run_id = parent.data.tags.get(FLOW_RUN_ID, "")
    with store_lock(client):
        found = find_candidate_run(client, experiment_id, cid)
        if found is None:
            tags = {PARENT_TAG: parent_run_id, KIND: "candidate", CANDIDATE_ID: cid, FLOW_RUN_ID: flow_run_id}
            run = client.create_run(experiment_id, tags=tags, run_name=run_name or f"candidate-{cid[:8]}",
                                    start_time=start_time_ms)
            filter_string = f"tags.`{CANDIDATE_ID}` = {_quote(cid)}"
            winner = _dedupe(client, experiment_id, filter_string, run.info.run_id)[0]
            return CandidateRun(run_id=winner.info.run_id, reused=winner.info.run_id != run.info.run_id)
    status = found.info.status
    if is_complete(found):
        return CandidateRun(run_id=found.info.run_id, reused=True, previous_status=status, complete=True)
    _reopen(client, found, parent_run_id, flow_run_id)
    return CandidateRun(run_id=found.info.run_id, reused=True, previous_status=status)


def is_complete(run: Run) -> bool:
    """Whether a candidate's run was fully logged and ended: a flow can skip evaluating it again.

    A run whose verdict is `error` (tunegate failed to evaluate the candidate) is never complete:
    a rerun evaluates the candidate again, into the same run. A pruned candidate's run ends KILLED
    (stopped early, by the sweep's rule) and is complete.
    """
    tags = run.data.tags
    ended = run.info.status in ("FINISHED", "FAILED") or (run.info.status == "KILLED" and tags.get(VERDICT) == "pruned")
    return tags.get(COMPLETE) == "true" and ended and tags.get(VERDICT) != "error"


def _reopen(client: MlflowClient, run: Run, parent_run_id: str, flow_run_id: str) -> None:
    old_parent = run.data.tags.get(PARENT_TAG)
    if old_parent and old_parent != parent_run_id:
        client.set_tag(run.info.run_id, REOPENED_FROM, old_parent)
        client.set_tag(run.info.run_id, PARENT_TAG, parent_run_id)
    client.set_tag(run.info.run_id, FLOW_RUN_ID, flow_run_id)
    for stale in (KILLED_REASON, FAILURE_REASON, COMPLETE):
        if stale in run.data.tags:
            client.delete_tag(run.info.run_id, stale)
    if run.info.status != "RUNNING":
        client.update_run(run.info.run_id, status="RUNNING")


def end_run(client: MlflowClient, run_id: str, status: str, reason: str = "", end_time_ms: int | None = None) -> None:
    """Mark a run terminal (at `end_time_ms`, default now); FAILED and KILLED runs carry their reason as a tag."""
    if reason:
        client.set_tag(run_id, FAILURE_REASON if status == "FAILED" else KILLED_REASON, reason[:5000])
    client.set_terminated(run_id, status, end_time=end_time_ms or int(time.time() * 1000))


def supersede(client: MlflowClient, run_id: str, lineage: str) -> list[str]:
    """Mark every other run of `lineage` not yet superseded as superseded by `run_id`; return their ids."""
    experiment_id = client.get_run(run_id).info.experiment_id
    older = [r.info.run_id for r in search_all(client, [experiment_id], f"tags.`{LINEAGE}` = {_quote(lineage)}")
             if r.info.run_id != run_id and SUPERSEDED_BY not in r.data.tags]
    for old in older:
        client.set_tag(old, SUPERSEDED_BY, run_id)
    return older


def adopt(client: MlflowClient, run: Run, parent_run_id: str) -> None:
    """Move a complete candidate run that another sweep logged under `parent_run_id`, which reuses it.

    That parent now ranks and charts it. A parent left without children was an earlier form of this
    sweep (its spec edited, nothing else): it is marked superseded and deleted (MLflow keeps deleted
    runs until `mlflow gc`, and `mlflow runs restore` brings one back), never left empty.
    """
    old_parent = run.data.tags.get(PARENT_TAG)
    if not old_parent or old_parent == parent_run_id:
        return
    client.set_tag(run.info.run_id, REOPENED_FROM, old_parent)
    client.set_tag(run.info.run_id, PARENT_TAG, parent_run_id)
    if not children(client, old_parent) and client.get_run(old_parent).info.status != "RUNNING":
        client.set_tag(old_parent, SUPERSEDED_BY, parent_run_id)
        client.delete_run(old_parent)


def children(client: MlflowClient, parent_run_id: str) -> list[Run]:
    """The candidate runs under a parent."""
    parent = client.get_run(parent_run_id)
    return search_all(client, [parent.info.experiment_id],
                      f"tags.`{PARENT_TAG}` = {_quote(parent_run_id)}")
