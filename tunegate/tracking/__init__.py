"""MLflow tracking for tunegate, as plain Python (no Prefect): the one import the flows need.

What a flow calls, in order:

    uri = resolve_tracking_uri(spec, spec_path)           # sqlite:///<spec folder>/mlflow.db by default
    ensure_store(uri)                                      # once, under a file lock, before any fan-out
    client = open_client(uri)
    reconcile_stale_runs(client, spec.tracking.experiment, is_alive)   # end runs of crashed flow runs
    parent = start_parent(client, spec.tracking.experiment, flow_run_id, tags, validation_digest)
    for each candidate (in any thread or process):
        done = find_candidate_run(client, experiment_id, cid)   # optional: skip a complete one
        if done is not None and is_complete(done): continue
        record = record_from_report(report, candidate_spec, mini_run_steps=..., val_loss=...)
        log_candidate(open_client(uri), parent, record)    # FINISHED / FAILED, never raises
    finish_parent(client, parent)                          # tags the best run, ends the parent

One run per thing that happened: a retry of a flow run lands in its own parent and runs again;
each preflight and full run is a run of its own that supersedes the earlier one of the same spec
and data (`tunegate.superseded_by`); a rerun of a sweep continues the sweep's parent.

The modules behind it each hold one job: `store` (URI, store creation, experiment),
`artifact_root` (a copied or moved store writes inside its own project), `record` (the pydantic
input and the param allowlist), `runs` (the run tree, idempotent), `candidate_log` (what a
candidate logs), `reconcile` (stale runs), `session` (one flow run's parent, named for what it
did), `runs_table` (grouping and ranking by data), `runs_listing` (what `tunegate runs` prints),
`experiment_data` (one validation set per experiment), `warning_tags` (a run's warnings as a tag).
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {
    "IncomparableRunsError": "tunegate.errors",
    **dict.fromkeys(["CandidateLogResult", "log_candidate"], "tunegate.tracking.candidate_log"),
    **dict.fromkeys(["ReconcileResult", "reconcile_stale_runs"], "tunegate.tracking.reconcile"),
    **dict.fromkeys(["PARAM_ALLOWLIST", "CandidateRecord", "DatasetRef", "StepMetrics", "candidate_id",
                     "params_from_spec", "record_from_report"], "tunegate.tracking.record"),
    **dict.fromkeys(["CandidateRun", "find_candidate_run", "is_complete", "open_candidate_run", "start_parent"],
                    "tunegate.tracking.runs"),
    **dict.fromkeys(["RunRow", "candidate_rows", "compare_runs", "finish_parent", "group_by_validation"],
                    "tunegate.tracking.runs_table"),
    **dict.fromkeys(["check_tracking_uri", "ensure_experiment", "ensure_store", "open_client", "resolve_tracking_uri"],
                    "tunegate.tracking.store"),
}

__all__ = [
    "CandidateLogResult", "CandidateRecord", "CandidateRun", "DatasetRef", "IncomparableRunsError",
    "PARAM_ALLOWLIST", "ReconcileResult", "RunRow", "StepMetrics", "candidate_id", "candidate_rows",
    "check_tracking_uri", "compare_runs", "ensure_experiment", "ensure_store", "find_candidate_run",
    "finish_parent", "group_by_validation", "is_complete", "log_candidate", "open_candidate_run", "open_client",
    "params_from_spec", "reconcile_stale_runs", "record_from_report", "resolve_tracking_uri",
    "start_parent",
]
__getattr__ = front_door(__name__, _HOME)
