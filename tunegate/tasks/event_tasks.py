"""Tell Prefect what a preflight concluded: the event prefect.yaml's full-run trigger waits for."""
from __future__ import annotations

from prefect import get_run_logger, task
from prefect.events import emit_event

from tunegate.events.payload import preflight_event
from tunegate.report import GateReport


@task(name="emit-preflight-event")
def emit_preflight_event_task(report: GateReport, spec_path: str, report_file: str) -> str:
    """Emit tunegate.preflight.approved (or .rejected) with the spec, the report and the approval's digests."""
    message = preflight_event(report, spec_path, report_file)
    # Prefect's events worker sends it (and relates it to this flow run and task run); it drains at exit.
    emit_event(message.event, resource=message.resource, payload=message.payload)
    get_run_logger().info(f"emitted {message.event} for {message.resource['prefect.resource.id']}")
    return message.event
