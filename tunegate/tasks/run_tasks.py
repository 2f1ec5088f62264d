"""The flow run's own labels: tags with the model and data version it gates, filterable in the UI."""
from __future__ import annotations

from prefect import task

from tunegate.spec.check import ParsedSpec
from tunegate.tasks.names import run_tags


@task(name="tag-flow-run")
def tag_flow_run_task(parsed: ParsedSpec) -> list[str]:
    """Add `model:<id>` and `data:<version>` to this flow run's tags (a deployment's own tags stay)."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    run_id = flow_run.get_id()
    if parsed.spec is None or run_id is None:  # an invalid spec: the gate's findings say why
        return []
    wanted = run_tags(parsed.spec)
    with get_client(sync_client=True) as client:
        current = client.read_flow_run(UUID(run_id)).tags
        client.update_flow_run(UUID(run_id), tags=sorted(set(current) | set(wanted)))
    return wanted
