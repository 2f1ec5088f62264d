"""MLflow tracking as Prefect tasks: open the flow run's parent, log candidates, close it."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import task
from prefect.runtime import flow_run

from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.tracking.session import TrackingSession, claim_experiment, close_session, log_report, open_session


def flow_run_state(flow_run_id: str) -> str | None:
    """The Prefect state name of a flow run, or None when this API does not know it."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    try:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(UUID(flow_run_id)).state
    except (ObjectNotFound, ValueError):
        return None
    return state.type.value if state else None


def current_flow_run_id() -> str:
    return str(flow_run.get_id() or "local")


@task(name="open-tracking")
def open_tracking_task(parsed: ParsedSpec, kind: str, validation_digest: str | None = None,
                       train_digest: str | None = None, variant: str | None = None) -> TrackingSession:
    """Make the MLflow store ready, reconcile crashed runs, open this flow run's parent run."""
    return open_session(parsed.require(), parsed.path, current_flow_run_id(), kind, flow_run_state,
                        validation_digest, train_digest, variant, validation_in_version(parsed))


@task(name="claim-experiment")
def claim_experiment_task(parsed: ParsedSpec, report: GateReport) -> None:
    """Refuse, before the mini-run, a spec whose validation data is not the one its experiment holds."""
    digest = (report.fingerprints.get("validation") or {}).get("digest")
    if parsed.spec is not None and digest:
        claim_experiment(parsed.spec, parsed.path, digest, validation_in_version(parsed))


def validation_in_version(parsed: ParsedSpec) -> Callable[[str], str | None]:
    """The spec's validation data hashed in the fingerprint version a digest an experiment holds was
    taken with (None when that is the version of today's digests: no need to hash it again)."""
    def in_version(held: str) -> str | None:
        from tunegate.dataset.fingerprint import ALGORITHM, algorithm_of, fingerprint_file

        version = algorithm_of(held)
        if version == ALGORITHM or parsed.spec is None:
            return None
        return fingerprint_file(parsed.spec.data.files("validation"), version).digest

    return in_version


@task(name="log-candidate", retries=1)
def log_candidate_task(session: TrackingSession, report: GateReport, parsed: ParsedSpec, **measured: Any) -> str:
    """Log one candidate (params, metrics, datasets, report, verdict, warnings) as a child run; return its id."""
    from tunegate.sweep.warning_counts import warning_counts

    measured.setdefault("warnings", warning_counts(report))  # beside the verdict, truncation first
    return log_report(session, report, parsed.require(), **measured).run_id


@task(name="close-tracking")
def close_tracking_task(session: TrackingSession, failed_reason: str = "", best_spec: str | None = None,
                        candidates: int | None = None) -> str | None:
    """End the parent run with its verdict, tag the best candidate, attach its spec."""
    return close_session(session, failed_reason, best_spec, candidates)


@task(name="chart-candidates")
def chart_candidates_task(session: TrackingSession, title: str) -> dict[str, bytes]:
    """Put validation loss per candidate and every candidate's loss curve on the parent run."""
    from tunegate.tracking.parent_charts import chart_candidates
    from tunegate.tracking.store import open_client

    return chart_candidates(open_client(session.uri), session.parent_run_id, title)
