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


def test_the_preflight_run_is_named_for_its_spec_and_logs_the_mini_runs_validation_loss(
        prefect_api, tiny_cache, workdir):
    from tunegate.flows.preflight import preflight

    assert preflight(str(workdir / "good.yaml"), return_state=True).is_completed()
    client, runs = _mlflow_runs(workdir)
    child = next(r for r in runs if r.data.tags.get("tunegate.kind") == "candidate")
    parent = next(r for r in runs if r.data.tags.get("tunegate.kind") == "parent")
    assert child.info.run_name == parent.info.run_name == "preflight good"
    assert child.data.metrics["val/loss"] == child.data.metrics["mini_run/eval_loss"] > 0
    assert child.data.tags["tunegate.val_scope"] == "mini-run eval batch"  # shown, never ranked
    assert child.data.params["run.kind"] == "preflight" and child.data.params["run.trained_steps"] == "3"
    assert child.data.tags["tunegate.approved_for_full_run"] == "true"
    assert "frozen validation set" in child.data.tags["tunegate.caveats"]


def test_a_preflight_without_the_mini_run_passes_but_approves_no_full_run(prefect_api, workdir):
    from tunegate.flows.preflight import preflight

    state = preflight(str(workdir / "good.yaml"), mini_run=False, advisor=False, return_state=True)
    assert state.is_completed()  # every gate that ran passed
    assert "not approved for a full run" in state.message and "mini-run not run" in state.message
    report = state.result()
    assert report["gates_passed"] is True and report["approved_for_full_run"] is False
    saved = json.loads((workdir / ".tunegate" / "reports" / "good.json").read_text())
    assert saved["approved_for_full_run"] is False and saved["not_run"] == {"mini-run": "not run"}
    client, runs = _mlflow_runs(workdir)
    child = next(r for r in runs if r.data.tags.get("tunegate.kind") == "candidate")
    assert child.data.tags["tunegate.verdict"] == "passed" and child.info.status == "FINISHED"
    assert child.data.tags["tunegate.gates_not_run"] == "mini-run not run"
    md = client.download_artifacts(child.info.run_id, "report.md", str(workdir))
    text = open(md, encoding="utf-8").read()
    assert "not approved for a full run" in text.splitlines()[0] and "review representative samples" in text
