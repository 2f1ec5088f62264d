"""Sweep steps as Prefect tasks: propose candidates, evaluate one (gate, short training, log)."""
from __future__ import annotations

from typing import Any

from prefect import task

from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.sweep.budget import Budget
from tunegate.sweep.candidates import propose
from tunegate.sweep.evaluate import CandidateOutcome, evaluate_candidate
from tunegate.tasks.report_tasks import publish_candidate
from tunegate.tracking.session import TrackingSession


@task(name="propose-candidates")
def propose_task(parsed: ParsedSpec, strategy: str | None = None) -> list[dict[str, Any]]:
    """List the sweep's candidates (explicit list or grid) as dotted-key overrides."""
    return propose(parsed.require(), strategy)


@task(name="evaluate-candidate", tags=["gpu"], task_run_name="candidate {overrides}")
def evaluate_candidate_task(parsed: ParsedSpec, overrides: dict[str, Any], base: GateReport,
                            session: TrackingSession | None, budget: Budget | int,
                            parallel: int = 1) -> CandidateOutcome:
    """Gate one candidate (spec, estimate, mini-run), train it briefly (or until pruned), score it, log it."""
    outcome = evaluate_candidate(parsed, overrides, base, session, budget, parallel)
    publish_candidate(outcome, parsed.path)
    return outcome
