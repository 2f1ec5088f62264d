"""The preflight flow: stages as tasks, the verdict as the flow run's state, MLflow and the report."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def _mlflow_runs(workdir):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate")
    return client, client.search_runs([exp.experiment_id])


def test_approved_spec_completes_and_is_tracked_with_parent_and_child(prefect_api, tiny_cache, workdir):
    from tunegate.flows.preflight import preflight

    state = preflight(str(workdir / "good.yaml"), return_state=True)
    assert state.is_completed(), state.message
    report = state.result()
    assert report["approved_for_full_run"] is True
    assert [s["name"] for s in report["stages"]] == ["spec", "dataset", "overlap", "estimate", "mini-run",
                                                     "advisor"]
    client, runs = _mlflow_runs(workdir)
    parents = [r for r in runs if r.data.tags.get("tunegate.kind") == "parent"]
    children = [r for r in runs if r.data.tags.get("tunegate.kind") == "candidate"]
    assert len(parents) == 1 and len(children) == 1
    child = children[0]
    assert child.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
    assert child.info.status == "FINISHED" and parents[0].info.status == "FINISHED"
    assert child.data.params["lora.r"] == "8" and child.data.params["training.learning_rate"] == "0.0002"
    assert len(client.get_metric_history(child.info.run_id, "mini_run/loss")) == 3
    saved = json.loads((workdir / ".tunegate" / "reports" / "good.json").read_text())
    assert saved["approved_for_full_run"] is True


def test_rejected_data_fails_the_flow_run_with_the_stage_and_logs_a_failed_candidate(prefect_api, workdir):
    from tunegate.flows.preflight import preflight

    state = preflight(str(workdir / "bad_data.yaml"), return_state=True)
    assert state.is_failed()
    assert "stage 'dataset'" in state.message
    report = state.result(raise_on_failure=False)
    assert report["approved_for_full_run"] is False
    assert {f["code"] for f in report["findings"]} >= {"TG204"}
    _, runs = _mlflow_runs(workdir)
    child = next(r for r in runs if r.data.tags.get("tunegate.kind") == "candidate")
    assert child.info.status == "FAILED"
    assert "TG204" in child.data.tags["tunegate.failing_codes"]
