"""The preflight flow: every gate stage, cheapest first; the run ends Failed when the gate rejects.

    tunegate preflight examples/quickstart.yaml        # locally, no server needed
    prefect deployment run preflight/preflight -p spec_path=examples/quickstart.yaml

prefect.yaml's trigger also starts it on a tunegate.dataset.version event (`tunegate check --emit-event`);
it emits tunegate.preflight.approved (or .rejected) when done, which the full-run trigger waits for.
"""
from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.states import Completed, Failed

from tunegate.facts import GateFacts
from tunegate.render import verdict_text
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.sweep.start_ahead import trainers_stopped_after
from tunegate.tasks.event_tasks import emit_preflight_event_task
from tunegate.tasks.gate_tasks import advisor_task, mini_run_task, parse_spec_task, static_gate_task
from tunegate.tasks.names import flow_run_namer
from tunegate.tasks.report_tasks import publish_report_task
from tunegate.tasks.run_tasks import tag_flow_run_task
from tunegate.tasks.tracking_tasks import (claim_experiment_task, close_tracking_task, log_candidate_task,
                                           open_tracking_task)


@flow(name="preflight", flow_run_name=flow_run_namer("preflight"), log_prints=True)
def preflight(spec_path: str, mini_run: bool = True, advisor: bool = True,
              mini_run_deployment: str | None = None, emit_event: bool = True):
    """Gate one spec: static stages, mini-run, advisor; track it in MLflow; fail if rejected."""
    parsed = parse_spec_task(spec_path)
    tag_flow_run_task(parsed)
    with trainers_stopped_after():  # the mini-run's fork server, when `tunegate preflight` started one
        report = static_gate_task(parsed)
        claim_experiment_task(parsed, report)  # one validation set per experiment: refused before the mini-run
        if report.gates_passed and mini_run:
            report = GateReport.merge([report, _mini_run(parsed, report.facts, mini_run_deployment)])
    if report.gates_passed and advisor:
        report = GateReport.merge([report, advisor_task(parsed, report.facts)])
    if parsed.valid:
        session = open_tracking_task(parsed, "preflight", _digest(report, "validation"), _digest(report, "train"))
        log_candidate_task(session, report, parsed, name=f"preflight {Path(spec_path).stem}", kind="preflight")
        close_tracking_task(session, "" if report.gates_passed else "gate rejected the spec")
    report_file = publish_report_task(report, spec_path)
    if emit_event:  # an approval starts the full-run trigger (a sweep's --launch-best starts its own)
        emit_preflight_event_task(report, spec_path, report_file)
    data = report.model_dump(mode="json")
    if not report.gates_passed:
        return Failed(message=f"gate {verdict_text(report)}", data=data)
    return Completed(message=verdict_text(report), data=data)


def _mini_run(parsed: ParsedSpec, facts: GateFacts, deployment: str | None) -> GateReport:
    """In-process by default; on the GPU work pool's `mini-run` deployment when one is named."""
    if deployment is None:
        return mini_run_task(parsed, facts)
    from prefect.deployments import run_deployment

    from tunegate.events.paths import portable, project_root

    # The worker reads the spec itself, in its own checkout: the path goes relative to the project root.
    spec_path = portable(parsed.path, project_root(parsed.path))
    run = run_deployment(deployment, parameters={"spec_path": spec_path, "facts": facts.as_json()})
    return GateReport.model_validate(run.state.result())


def _digest(report: GateReport, role: str) -> str | None:
    return (report.fingerprints.get(role) or {}).get("digest")
