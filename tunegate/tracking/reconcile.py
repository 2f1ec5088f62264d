"""End the runs that crashed flow runs left RUNNING.

MLflow never ends a run whose process got SIGKILL or SIGTERM: it stays RUNNING with no end time,
forever. So each new flow run first reconciles: every RUNNING run tunegate opened (it carries a
flow-run-id tag) whose flow run is no longer alive is marked KILLED, and so are the RUNNING
children of such a parent. `is_alive` comes from the caller (the flows pass a Prefect state
lookup; this module imports no Prefect).

    result = reconcile_stale_runs(client, "tunegate", is_alive=lambda fid: fid == current_flow_run_id)
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from tunegate.tracking.runs import FLOW_RUN_ID, PARENT_TAG, end_run, search_all

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

log = logging.getLogger(__name__)


class ReconcileResult(BaseModel):
    killed: list[str] = Field(default_factory=list, description="Run ids marked KILLED.")
    unknown: list[str] = Field(default_factory=list,
                               description="Flow run ids whose liveness could not be checked; their runs were left alone.")


def reconcile_stale_runs(client: MlflowClient, experiment: str,
                         is_alive: Callable[[str], bool]) -> ReconcileResult:
    """Mark KILLED every RUNNING run of `experiment` whose flow run is dead, and its RUNNING children.

    A run without a flow-run-id tag was not opened by tunegate and is never touched. When
    `is_alive` raises (the orchestrator is unreachable), the run is left as it is: killing a live
    run would be worse than leaving a dead one for the next pass.
    """
    result = ReconcileResult()
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return result
    running = search_all(client, [exp.experiment_id], "attributes.status = 'RUNNING'")
    verdicts: dict[str, bool | None] = {}
    dead: dict[str, str] = {}  # run id -> its flow run id
    for run in running:
        flow_run_id = run.data.tags.get(FLOW_RUN_ID)
        if not flow_run_id:
            continue
        if flow_run_id not in verdicts:
            verdicts[flow_run_id] = _alive(is_alive, flow_run_id, result)
        if verdicts[flow_run_id] is False:
            dead[run.info.run_id] = flow_run_id
    for run in _orphans(running, dead):
        dead[run.info.run_id] = dead[run.data.tags[PARENT_TAG]]
    for run_id, flow_run_id in dead.items():
        end_run(client, run_id, "KILLED", f"flow run {flow_run_id} is no longer running; "
                                          "the run was left RUNNING by a crash and reconciled")
        result.killed.append(run_id)
    return result


def _alive(is_alive: Callable[[str], bool], flow_run_id: str, result: ReconcileResult) -> bool | None:
    try:
        return bool(is_alive(flow_run_id))
    except Exception as exc:  # an unreachable orchestrator is not proof of death
        log.warning("cannot tell whether flow run %s is alive (%s); leaving its runs alone", flow_run_id, exc)
        result.unknown.append(flow_run_id)
        return None


def _orphans(running: list[Run], dead: dict[str, str]) -> list[Run]:
    """RUNNING children of a dead parent that carry no flow-run-id tag of their own (e.g. a run
    opened inside the candidate by the HF Trainer). A child tagged with a live flow run is kept."""
    return [r for r in running
            if r.info.run_id not in dead and r.data.tags.get(PARENT_TAG) in dead
            and FLOW_RUN_ID not in r.data.tags]
