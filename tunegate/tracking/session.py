"""One flow run's MLflow session: the store made ready, stale runs reconciled, the parent opened.

Plain Python: the flows pass their flow-run id and a liveness check, so this module imports no
Prefect. A flow retry keeps its flow-run id and lands in the same parent run.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tunegate.report import GateReport
from tunegate.spec.model import Spec
from tunegate.tracking import (
    CandidateLogResult,
    ensure_store,
    finish_parent,
    log_candidate,
    open_client,
    reconcile_stale_runs,
    record_from_report,
    resolve_tracking_uri,
    start_parent,
)

HOST_TAG, PID_TAG = "tunegate.host", "tunegate.pid"


class TrackingSession(BaseModel):
    """Where a flow run logs: the store, the experiment and its parent run (and the parent's name)."""

    uri: str
    experiment: str
    parent_run_id: str
    name: str = ""


# What each flow is called in a run's name: `preflight quickstart`, `full run quickstart`, `sweep ...`.
KIND_NAMES = {"preflight": "preflight", "full-run": "full run", "sweep": "sweep"}
# Runs whose identity is their attempt: each preflight and each full run is a new run.
ONE_RUN_PER_ATTEMPT = {"preflight", "full run"}


# Orchestrator states in which a flow run may still write to its runs.
LIVE_STATES = {"SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING"}


def open_session(spec: Spec, spec_path: str | Path, flow_run_id: str, kind: str,
                 flow_run_state: Callable[[str], str | None],
                 validation_digest: str | None = None, train_digest: str | None = None,
                 variant: str | None = None, in_version: Callable[[str], str | None] | None = None) -> TrackingSession:
    """Create the store once, end runs that crashed flow runs left RUNNING, open the parent.

    `flow_run_state(id)` returns the orchestrator's state name of a flow run, or None if unknown.
    The parent is named for what it did: `preflight quickstart`, `full run quickstart`, `sweep
    support-v1` (`... 3 candidates` once closed). A preflight's or full run's parent is its flow
    run's; a sweep's is the sweep's (its spec, data and `variant`, the strategy asked for), so a
    rerun continues it.
    """
    uri = resolve_tracking_uri(spec, spec_path)
    ensure_store(uri)
    client = open_client(uri)
    experiment = spec.tracking.experiment
    if validation_digest:  # one validation set per experiment: another is refused (tracking.experiment_data)
        _claim(client, spec, uri, validation_digest, in_version)
    reconcile_stale_runs(client, experiment, liveness(client, experiment, flow_run_id, flow_run_state))
    tags = {"tunegate.flow": kind, HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}
    key = sweep_key(spec_path, validation_digest, train_digest, variant) if kind == "sweep" else None
    name = parent_name(kind, spec, spec_path)
    parent = start_parent(client, experiment, flow_run_id, tags, validation_digest=validation_digest,
                          run_name=name, train_digest=train_digest, key=key)
    return TrackingSession(uri=uri, experiment=experiment, parent_run_id=parent, name=name)


def claim_experiment(spec: Spec, spec_path: str | Path, validation_digest: str,
                     in_version: Callable[[str], str | None] | None = None) -> None:
    """Make the store ready and claim the spec's experiment for this validation digest, before a flow
    spends anything on a run the experiment would refuse (a preflight's mini-run).

    Raises:
        UsageError: the experiment holds runs on another validation set (both digests named).
    """
    uri = resolve_tracking_uri(spec, spec_path)
    ensure_store(uri)
    _claim(open_client(uri), spec, uri, validation_digest, in_version)


def _claim(client: Any, spec: Spec, uri: str, digest: str, in_version: Callable[[str], str | None] | None) -> None:
    from tunegate.tracking import ensure_experiment
    from tunegate.tracking.experiment_data import claim_validation

    experiment = spec.tracking.experiment
    claim_validation(client, ensure_experiment(client, experiment, uri), experiment, digest,
                     spec.data.names("validation"), in_version)


def parent_name(kind: str, spec: Spec, spec_path: str | Path) -> str:
    """`preflight quickstart`; a sweep spec called `sweep.yaml` is named for its data instead of
    `sweep sweep` (its data version, else its folder)."""
    stem = Path(spec_path).stem
    if stem.lower() == kind.lower():
        stem = spec.data.version or Path(spec_path).resolve().parent.name
    return f"{KIND_NAMES.get(kind, kind)} {stem}"


def sweep_key(spec_path: str | Path, validation_digest: str | None, train_digest: str | None,
              variant: str | None) -> str:
    """The same sweep: the spec's bytes, its data, the strategy asked for (not where the project is)."""
    import hashlib

    from tunegate.spec.digest import spec_digest

    parts = [spec_digest(spec_path), validation_digest or "", train_digest or "", variant or ""]
    return "sweep:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def log_report(session: TrackingSession, report: GateReport, spec: Spec, **measured: Any) -> CandidateLogResult:
    """Log one candidate's report and measurements as a child of the session's parent."""
    from tunegate.tracking.report_metrics import report_measurements

    fields = {**report_measurements(report), **measured}
    if fields.get("kind") == "preflight" and fields.get("val_loss") is None \
            and fields.get("mini_run_eval_loss") is not None:
        # A preflight's only validation loss: logged, but marked, so it is never ranked beside a
        # candidate scored on the whole validation set.
        fields.update(val_loss=fields["mini_run_eval_loss"], val_scope="mini-run eval batch")
    # Each preflight and full run is a run of its own (a Prefect retry of this one keeps its parent).
    attempt = session.parent_run_id if fields.get("kind") in ONE_RUN_PER_ATTEMPT else ""
    record = record_from_report(report, spec, attempt=attempt, **fields)
    return log_candidate(open_client(session.uri), session.parent_run_id, record)


def log_rejected_spec(session: TrackingSession, report: GateReport, base: Spec, overrides: dict[str, Any],
                      **measured: Any) -> CandidateLogResult:
    """Log a sweep candidate the spec stage rejected: a FAILED run with its reason, params as written."""
    from tunegate.tracking.record import record_from_overrides

    record = record_from_overrides(report, base, overrides, **measured)
    return log_candidate(open_client(session.uri), session.parent_run_id, record)


def log_error(session: TrackingSession, base: Spec, overrides: dict[str, Any], reason: str,
              name: str | None = None) -> str | None:
    """Log a sweep candidate tunegate failed to evaluate: a FAILED run, verdict `error`, the reason."""
    from tunegate.tracking.record import record_from_overrides

    record = record_from_overrides(GateReport.from_stages([]), base, overrides, verdict="error", reason=reason,
                                   failing_codes=[], name=name, kind="sweep candidate")
    return log_candidate(open_client(session.uri), session.parent_run_id, record).run_id


def finished_candidate(session: TrackingSession, cid: str) -> dict[str, Any] | None:
    """The logged outcome of candidate `cid` (same params, same data) if a run of it completed.

    Prefect runs a task at least once: a sweep rerun after a crash finds here what it need not redo.
    """
    from tunegate.tracking import find_candidate_run, is_complete
    from tunegate.tracking.runs import (FAILING_CODES, FAILURE_REASON, KILLED_REASON, PRUNED_AT, STEPS_SAVED,
                                        VERDICT, adopt)
    from tunegate.tracking.warning_tags import WARNINGS, parse_warnings_tag

    client = open_client(session.uri)
    experiment_id = client.get_run(session.parent_run_id).info.experiment_id
    run = find_candidate_run(client, experiment_id, cid)
    if run is None or not is_complete(run):
        return None
    adopt(client, run, session.parent_run_id)  # this sweep reuses it: it ranks and charts it too
    tags, metrics = run.data.tags, run.data.metrics
    codes = [c for c in tags.get(FAILING_CODES, "").split(",") if c]
    pruned = tags.get(PRUNED_AT)
    return {"run_id": run.info.run_id, "approved": tags.get(VERDICT) in ("approved", "pruned"),
            "reason": tags.get(FAILURE_REASON) or tags.get(KILLED_REASON, ""), "codes": codes,
            "val_loss": metrics.get("val/loss"), "final_train_loss": metrics.get("train/final_loss"),
            "pruned_at_step": int(pruned) if pruned and pruned.isdigit() else None,
            "steps_saved": int(tags[STEPS_SAVED]) if tags.get(STEPS_SAVED, "").isdigit() else None,
            "warnings": parse_warnings_tag(tags.get(WARNINGS))}


def close_session(session: TrackingSession, failed_reason: str = "", best_spec: str | None = None,
                  candidates: int | None = None) -> str | None:
    """End the parent (FAILED with the reason, if any) and tag its best run; return that run id.

    A sweep's best candidate spec is attached to the parent as `best_spec.yaml`, ready for
    `tunegate preflight` and `tunegate launch`; its name ends with the `candidates` it considered.
    """
    client = open_client(session.uri)
    if candidates is not None and session.name:
        client.update_run(session.parent_run_id, name=f"{session.name} {candidates} "
                                                      f"candidate{'' if candidates == 1 else 's'}")
    if best_spec:
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "best_spec.yaml"
            shutil.copyfile(best_spec, copy)
            client.log_artifact(session.parent_run_id, str(copy))
    return finish_parent(client, session.parent_run_id, failed_reason)


def liveness(client: Any, experiment: str, current: str,
             flow_run_state: Callable[[str], str | None]) -> Callable[[str], bool]:
    """Whether the flow run that opened a run still lives.

    On this host the process itself answers: a SIGKILLed flow run stays RUNNING in Prefect (unless
    heartbeats and zombie detection are set up), but its process is gone. Elsewhere the
    orchestrator's state answers; unknown raises, and the reconciler then leaves the run alone.
    """
    from tunegate.tracking.runs import FLOW_RUN_ID, KIND, search_all

    exp = client.get_experiment_by_name(experiment)
    owners: dict[str, tuple[str, str]] = {}
    if exp is not None:
        for run in search_all(client, [exp.experiment_id], f"tags.`{KIND}` = 'parent'"):
            tags = run.data.tags
            if FLOW_RUN_ID in tags:
                owners[tags[FLOW_RUN_ID]] = (tags.get(HOST_TAG, ""), tags.get(PID_TAG, ""))
    here = socket.gethostname()

    def is_alive(flow_run_id: str) -> bool:
        if flow_run_id == current:
            return True
        host, pid = owners.get(flow_run_id, ("", ""))
        if host == here and pid.isdigit():
            return process_alive(int(pid))
        state = flow_run_state(flow_run_id)
        if state is None:
            raise LookupError(f"the orchestrator does not know flow run {flow_run_id}")
        return state.upper() in LIVE_STATES

    return is_alive


def process_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (a SIGKILLed flow leaves no other trace)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def end_runs_of_process(client: Any, experiment: str, host: str, pid: int, reason: str) -> list[str]:
    """Mark KILLED the RUNNING parents this process (host, pid tags) opened, and their RUNNING children.

    For a process that is being terminated: it will not be alive to close them, and the next
    reconcile could only guess (a pid may be reused).
    """
    from tunegate.tracking.reachable import check_reachable
    from tunegate.tracking.runs import PARENT_TAG, end_run, search_all

    check_reachable(client.tracking_uri)  # a terminating process cannot wait out MLflow's retries
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    running = search_all(client, [exp.experiment_id], "attributes.status = 'RUNNING'")
    mine = {r.info.run_id for r in running
            if r.data.tags.get(HOST_TAG) == host and r.data.tags.get(PID_TAG) == str(pid)}
    ended = [r.info.run_id for r in running if r.info.run_id in mine or r.data.tags.get(PARENT_TAG) in mine]
    for run_id in ended:
        end_run(client, run_id, "KILLED", reason)
    return ended
