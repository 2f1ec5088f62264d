"""The mini-run alone, deployable on a GPU work pool so a preflight from a laptop uses the cluster.

    prefect deployment run mini-run/mini-run -p spec_path=/shared/specs/run.yaml
"""
from __future__ import annotations

from typing import Any

from prefect import flow

from tunegate.facts import GateFacts
from tunegate.tasks.gate_tasks import mini_run_task, parse_spec_task
from tunegate.tasks.names import flow_run_namer
from tunegate.tasks.run_tasks import tag_flow_run_task


@flow(name="mini-run", flow_run_name=flow_run_namer("mini-run"), log_prints=True, persist_result=True)
def mini_run(spec_path: str, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the mini-run stage of one spec on this worker's device; return its partial report."""
    parsed = parse_spec_task(spec_path)
    tag_flow_run_task(parsed)
    return mini_run_task(parsed, GateFacts.model_validate(facts or {})).model_dump(mode="json")
