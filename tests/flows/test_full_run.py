"""The full-run flow: refused without a matching approval, trained and tracked with one."""
from __future__ import annotations

import json

import pytest

from tunegate.errors import ApprovalError

pytestmark = pytest.mark.slow


def test_launch_without_a_preflight_is_refused(prefect_api, workdir):
    from tunegate.flows.full_run import full_run

    state = full_run(str(workdir / "good.yaml"), return_state=True)
    assert state.is_failed()
    with pytest.raises(ApprovalError, match="no preflight report"):
        state.result()


def test_changed_data_after_approval_refuses_the_launch(prefect_api, tiny_cache, workdir):
    from tunegate.flows.full_run import full_run
    from tunegate.flows.preflight import preflight

    spec = str(workdir / "good.yaml")
    assert preflight(spec, advisor=False, return_state=True).is_completed()
    with open(workdir / "train.jsonl", "a") as f:
        f.write('{"messages": [{"role": "user", "content": "late"}, {"role": "assistant", "content": "edit"}]}\n')
    state = full_run(spec, return_state=True)
    with pytest.raises(ApprovalError, match="train data .* changed since it was approved"):
        state.result()


def test_approved_spec_trains_evaluates_saves_and_logs_the_full_run(prefect_api, tiny_cache, workdir):
    from mlflow import MlflowClient

    from tunegate.flows.full_run import full_run
    from tunegate.flows.preflight import preflight

    spec = str(workdir / "good.yaml")
    assert preflight(spec, advisor=False, return_state=True).is_completed()
    state = full_run(spec, return_state=True)
    assert state.is_completed(), state.message
    result = state.result()
    assert result["status"] == "completed" and result["val_loss"] > 0
    assert (workdir / "out" / "full" / "adapter" / "COMPLETE").is_file()
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("tunegate").experiment_id],
                              "tags.`tunegate.kind` = 'candidate'")
    full = [r for r in runs if r.info.run_name == "full run good"]  # named for its spec
    assert len(full) == 1 and full[0].info.status == "FINISHED"
    assert full[0].data.metrics["val/loss"] == pytest.approx(result["val_loss"])
    assert len(client.get_metric_history(full[0].info.run_id, "train/loss")) >= 1
    assert json.loads((workdir / "out" / "full" / "train_result.json").read_text())["status"] == "completed"
    # Streamed while it trained: into the flow's parent run, every point inside the training's window,
    # which is the final record's run's own (its duration in MLflow is the training time).
    (parent,) = [r for r in client.search_runs([full[0].info.experiment_id], "tags.`tunegate.kind` = 'parent'")
                 if r.info.run_id == full[0].data.tags["mlflow.parentRunId"]]
    live = client.get_metric_history(parent.info.run_id, "live/train_loss")
    assert [m.step for m in live] == list(range(1, result["global_step"] + 1))
    assert full[0].info.start_time <= min(m.timestamp for m in live)
    assert max(m.timestamp for m in live) <= full[0].info.end_time
    assert full[0].data.metrics["train/duration_s"] * 1000 == pytest.approx(
        full[0].info.end_time - full[0].info.start_time, abs=2)
    assert client.get_metric_history(parent.info.run_id, "live/val_loss")
