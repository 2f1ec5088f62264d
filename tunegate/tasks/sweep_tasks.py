"""Sweep steps as Prefect tasks: propose candidates, evaluate one (gate, short training, log), here
or as a flow run of a deployment on a work pool (`sweep.candidates_on: deployment`)."""
from __future__ import annotations

from typing import Any

from prefect import task

from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.sweep.budget import Budget
from tunegate.sweep.candidates import propose
from tunegate.sweep.evaluate import CandidateOutcome, errored_outcome, evaluate_candidate
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


@task(name="candidate-deployment-run", task_run_name="candidate {overrides} on a deployment")
def run_candidate_deployment_task(parsed: ParsedSpec, overrides: dict[str, Any], base: GateReport,
                                  session: TrackingSession | None, budget: Budget,
                                  parallel: int = 1) -> CandidateOutcome:
    """Evaluate one candidate as a flow run of `sweep.deployment` (its pool's worker gates, trains and logs
    it) and wait for its outcome; a flow run that does not complete makes the candidate `errored`."""
    from prefect.deployments import run_deployment

    from tunegate.events.paths import portable, project_root

    name = parsed.require().sweep.deployment
    # The worker reads the spec in its own checkout: the path goes relative to the project root.
    parameters = {"spec_path": portable(parsed.path, project_root(parsed.path)), "overrides": overrides,
                  "base": base.model_dump(mode="json"), "session": session.model_dump() if session else None,
                  "budget": budget.model_dump(mode="json"), "parallel": parallel}
    try:
        run = run_deployment(name, parameters=parameters)
        if run.state is not None and run.state.is_completed():
            return CandidateOutcome.model_validate(run.state.result())
        why = f"its flow run {run.name} of {name} ended {run.state.name if run.state else 'without a state'}" + (
            f": {run.state.message}" if run.state is not None and run.state.message else "")
    except Exception as exc:  # noqa: BLE001  (no such deployment, the API gone: not a verdict on the candidate)
        why = f"its flow run of {name} could not be had: {type(exc).__name__}: {exc}"
    return errored_outcome(parsed, overrides, session, why)
