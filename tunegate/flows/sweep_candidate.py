"""One sweep candidate as a flow run of its own, deployable on the GPU work pool: what a sweep with
`sweep.candidates_on: deployment` starts for each candidate (`run_deployment`).

    prefect deployment run sweep-candidate/sweep-candidate -p spec_path=examples/sweep.yaml \\
        -p overrides='{"lora.r": 16, "lora.alpha": 32}'

The worker reads the spec in its own checkout (the path is relative to the project root), gates
the candidate there (its mini-run on the worker's device), trains it for the sweep's budget (and
reports to the sweep's pruning board), logs it under the sweep's MLflow parent, and returns its
outcome as JSON. Run by hand, without `base`, it gates the spec's data itself first.
"""
from __future__ import annotations

from typing import Any

from prefect import flow

from tunegate.report import GateReport
from tunegate.sweep.budget import Budget
from tunegate.tasks.gate_tasks import parse_spec_task, static_gate_task
from tunegate.tasks.names import flow_run_namer
from tunegate.tasks.run_tasks import tag_flow_run_task
from tunegate.tasks.sweep_tasks import evaluate_candidate_task
from tunegate.tracking.session import TrackingSession


@flow(name="sweep-candidate", flow_run_name=flow_run_namer("sweep-candidate"), log_prints=True, persist_result=True)
def sweep_candidate(spec_path: str, overrides: dict[str, Any] | None = None, base: dict[str, Any] | None = None,
                    session: dict[str, Any] | None = None, budget: dict[str, Any] | None = None,
                    parallel: int = 1) -> dict[str, Any]:
    """Gate, briefly train and score one sweep candidate on this worker; return its outcome."""
    parsed = parse_spec_task(spec_path)
    tag_flow_run_task(parsed)
    report = GateReport.model_validate(base) if base is not None else static_gate_task(parsed)
    steps = parsed.require().sweep.train_steps
    plan = Budget.model_validate(budget) if budget is not None else Budget(train_steps=steps)
    tracking = TrackingSession.model_validate(session) if session is not None else None
    outcome = evaluate_candidate_task(parsed, overrides or {}, report, tracking, plan, parallel)
    return outcome.model_dump(mode="json")
