"""The run tree in a real SQLite store: parent per flow run, one child per candidate, idempotent."""
from __future__ import annotations

import math

import pytest

from tests.support.tracking import (
    EXPERIMENT,
    approved_record,
    base_spec,
    other_validation,
    record_from_report,
    report,
    with_changes,
)
from tunegate.errors import IncomparableRunsError
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.record import StepMetrics
from tunegate.tracking.redaction import MASK
from tunegate.tracking.runs import (
    CANDIDATE_ID,
    FAILURE_REASON,
    PARENT_TAG,
    REOPENED_FROM,
    VALIDATION_DIGEST,
    children,
    end_run,
    open_candidate_run,
    search_all,
    start_parent,
)
from tunegate.tracking.runs_table import BEST_RUN, finish_parent


def _candidates(client, experiment=EXPERIMENT):
    exp = client.get_experiment_by_name(experiment)
    return search_all(client, [exp.experiment_id], "tags.`tunegate.kind` = 'candidate'")


def test_a_candidate_is_a_child_of_its_flow_runs_parent_with_params_and_metrics(client):
    parent = start_parent(client, EXPERIMENT, "flow-1", {"tunegate.flow": "sweep"})
    record = approved_record(n_steps=5)
    result = log_candidate(client, parent, record)
    run = client.get_run(result.run_id)
    assert result.status == run.info.status == "FINISHED"
    assert run.data.tags[PARENT_TAG] == parent and run.data.tags[CANDIDATE_ID] == record.candidate_id
    assert client.get_run(parent).data.tags["tunegate.flow_run_id"] == "flow-1"
    assert run.data.params["lora.r"] == "16" and run.data.params["training.learning_rate"] == "0.0002"
    assert run.data.params["model.id"] == "tunegate/tiny-llama" and run.data.params["data.version"] == "support-v1"
    history = client.get_metric_history(result.run_id, "mini_run/loss")
    assert [m.step for m in history] == [0, 1, 2, 3, 4]
    assert [m.value for m in history] == pytest.approx([s.loss for s in record.mini_run_steps])
    assert len(client.get_metric_history(result.run_id, "mini_run/grad_norm")) == 5
    assert run.data.metrics["val/loss"] == 1.8 and run.data.metrics["train/final_loss"] == pytest.approx(1.6)
    assert run.data.metrics["mini_run/tokens_per_s"] == 812.5 and run.data.metrics["estimate/hours"] == 11.5
    assert run.data.metrics["mini_run/peak_memory_gib"] == 3.25


def test_datasets_are_logged_as_inputs_with_our_content_digest(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record()
    run = client.get_run(log_candidate(client, parent, record).run_id)
    inputs = {i.dataset.name: i for i in run.inputs.dataset_inputs}
    assert set(inputs) == {"train.jsonl", "validation.jsonl"}
    val = inputs["validation.jsonl"]
    tags = {t.key: t.value for t in val.tags}
    full = record.dataset("validation").digest
    assert tags["mlflow.data.context"] == "validation" and tags["tunegate.digest"] == full
    assert val.dataset.digest == full.split(":")[1][:32]
    assert tags["tunegate.records"] == "2" and tags["tunegate.version"] == "support-v1"


def test_the_report_advice_and_loss_curve_are_artifacts(client, tmp_path):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    run_id = log_candidate(client, parent, approved_record()).run_id
    assert {f.path for f in client.list_artifacts(run_id)} == {"report.json", "report.md", "advice.json",
                                                               "loss_curve.svg"}
    chart = client.download_artifacts(run_id, "loss_curve.svg", str(tmp_path))
    assert open(chart, "rb").read().startswith(b'<svg xmlns="http://www.w3.org/2000/svg"')
    md = open(client.download_artifacts(run_id, "report.md", str(tmp_path))).read()
    assert md.startswith("# tunegate preflight: ✅ approved")


def test_logging_the_same_candidate_twice_keeps_one_run_and_one_point_per_step(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record()
    first = log_candidate(client, parent, record)
    second = log_candidate(client, parent, record)
    assert second.run_id == first.run_id and second.reused
    assert len(_candidates(client)) == 1
    assert len(client.get_metric_history(first.run_id, "mini_run/loss")) == 4


def test_a_rerun_after_a_crash_mid_logging_completes_the_run_without_duplicates(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record()
    # The first attempt opened the run and stored two steps, then its process died.
    run = open_candidate_run(client, parent, record.candidate_id)
    for s in record.mini_run_steps[:2]:
        client.log_metric(run.run_id, "mini_run/loss", s.loss, step=s.step)
    result = log_candidate(client, parent, record)
    assert result.run_id == run.run_id and result.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.run_id, "mini_run/loss")] == [0, 1, 2, 3]


def test_a_killed_candidate_redone_by_a_new_flow_run_moves_to_the_new_parent(client):
    old = start_parent(client, EXPERIMENT, "flow-crashed")
    record = approved_record()
    run = open_candidate_run(client, old, record.candidate_id)
    end_run(client, run.run_id, "KILLED", "flow run flow-crashed is no longer running")
    new = start_parent(client, EXPERIMENT, "flow-rerun")
    result = log_candidate(client, new, record)
    tags = client.get_run(result.run_id).data.tags
    assert result.run_id == run.run_id and result.status == "FINISHED"
    assert tags[PARENT_TAG] == new and tags[REOPENED_FROM] == old and "tunegate.killed_reason" not in tags
    assert len(_candidates(client)) == 1


def test_a_finished_candidate_is_not_logged_again_by_a_later_flow_run(client):
    first = log_candidate(client, start_parent(client, EXPERIMENT, "flow-1"), approved_record())
    again = log_candidate(client, start_parent(client, EXPERIMENT, "flow-2"), approved_record())
    assert again.run_id == first.run_id and again.reused and again.status == "FINISHED"
    assert len(_candidates(client)) == 1


def test_a_rejected_candidate_is_not_logged_again_either(client):
    record = record_from_report(report("rejected"), base_spec())
    first = log_candidate(client, start_parent(client, EXPERIMENT, "flow-1"), record)
    again = log_candidate(client, start_parent(client, EXPERIMENT, "flow-2"), record)
    assert (again.run_id, again.status, again.reused) == (first.run_id, "FAILED", True)


def test_a_run_ended_by_a_fluent_start_run_block_is_still_logged_completely(client, store_uri):
    import mlflow

    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record()
    run = open_candidate_run(client, parent, record.candidate_id)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(store_uri)
    try:  # what a trainer with report_to="mlflow" inside our run looks like
        with mlflow.start_run(run_id=run.run_id):
            mlflow.log_metric("train/loss", 2.0, step=0)
    finally:
        mlflow.set_tracking_uri(previous)
    assert client.get_run(run.run_id).info.status == "FINISHED"  # ended, though nothing was logged by us
    result = log_candidate(client, parent, record)
    assert result.run_id == run.run_id and not result.error
    assert "val/loss" in client.get_run(run.run_id).data.metrics


def test_a_flow_retry_reopens_the_same_parent(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    end_run(client, parent, "FAILED", "first attempt crashed")
    assert start_parent(client, EXPERIMENT, "flow-1") == parent
    assert client.get_run(parent).info.status == "RUNNING"
    assert start_parent(client, EXPERIMENT, "flow-2") != parent


def test_a_rejected_candidate_ends_failed_with_its_reason(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = record_from_report(report("rejected"), with_changes(base_spec(), lora={"r": 8}))
    result = log_candidate(client, parent, record)
    run = client.get_run(result.run_id)
    assert result.status == run.info.status == "FAILED"
    assert run.data.tags["tunegate.verdict"] == "rejected" and run.data.tags["tunegate.failing_codes"] == "TG204"
    assert run.data.tags[FAILURE_REASON] == "rejected by the gate at stage 'dataset': TG204"
    assert run.info.end_time is not None


def test_a_diverging_candidate_logs_its_nan_loss_and_fails(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    diverged = [StepMetrics(step=0, loss=2.1, grad_norm=1.0), StepMetrics(step=1, loss=math.nan, grad_norm=math.inf)]
    record = approved_record(verdict="rejected", failing_codes=["TG503"], reason="loss is NaN at step 1")
    record = record.model_copy(update={"mini_run_steps": diverged})
    result = log_candidate(client, parent, record)
    assert result.status == "FAILED"
    assert math.isnan(client.get_metric_history(result.run_id, "mini_run/loss")[1].value)
    assert client.get_run(result.run_id).data.tags[FAILURE_REASON] == "loss is NaN at step 1"


def test_an_exception_while_logging_marks_the_run_failed_and_the_sweep_goes_on(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record()
    first = log_candidate(client, parent, record)
    # Same candidate id, different param value: MLflow refuses to change a logged param.
    clash = record.model_copy(update={"params": {**record.params, "lora.r": 99}, "verdict": "rejected"})
    end_run(client, first.run_id, "KILLED")
    result = log_candidate(client, parent, clash)
    run = client.get_run(first.run_id)
    assert result.status == run.info.status == "FAILED"
    assert result.error.startswith("logging the candidate failed: MlflowException")
    assert run.data.tags[FAILURE_REASON] == result.error
    nxt = log_candidate(client, parent, approved_record(with_changes(base_spec(), lora={"r": 4})))
    assert nxt.status == "FINISHED"


def test_a_candidate_scored_on_another_validation_set_fails_in_this_sweep(client):
    record = approved_record()
    parent = start_parent(client, EXPERIMENT, "flow-1", validation_digest=record.validation_digest)
    result = log_candidate(client, parent, other_validation(record, "sha256:" + "f" * 64))
    reason = client.get_run(result.run_id).data.tags[FAILURE_REASON]
    assert result.status == "FAILED" and "differs from this flow run's frozen validation set" in reason


def test_finish_parent_tags_the_lowest_validation_loss_as_best(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    losses = {4: 1.9, 8: 1.4, 16: 1.7}
    runs = {r: log_candidate(client, parent, approved_record(with_changes(base_spec(), lora={"r": r}),
                                                             val_loss=v)).run_id for r, v in losses.items()}
    log_candidate(client, parent, record_from_report(report("rejected"), with_changes(base_spec(), lora={"r": 2})))
    assert finish_parent(client, parent) == runs[8]
    run = client.get_run(parent)
    assert run.data.tags[BEST_RUN] == runs[8] and run.info.status == "FINISHED"
    assert len(children(client, parent)) == 4


def test_finish_parent_refuses_children_scored_on_different_validation_sets(client):
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record()
    log_candidate(client, parent, record)
    log_candidate(client, parent, other_validation(record, "sha256:" + "e" * 64))
    with pytest.raises(IncomparableRunsError, match="2 validation digests"):
        finish_parent(client, parent)
    assert client.get_run(parent).info.status == "FAILED"
    assert VALIDATION_DIGEST not in client.get_run(parent).data.tags


def test_a_secret_in_a_failure_reason_is_masked(client, monkeypatch):
    monkeypatch.setenv("TUNEGATE_TEST_ADVISOR_KEY", "sk-test-reason-canary-0001")
    parent = start_parent(client, EXPERIMENT, "flow-1")
    record = approved_record(verdict="error", reason="advisor said: bad key sk-test-reason-canary-0001")
    run = client.get_run(log_candidate(client, parent, record).run_id)
    assert run.data.tags[FAILURE_REASON] == f"advisor said: bad key {MASK}"


def test_a_sweep_candidate_logs_its_reports_and_step_metrics_but_draws_no_chart(client):
    # The sweep charts its candidates once, on the parent run (tracking/parent_charts.py).
    parent = start_parent(client, EXPERIMENT, "flow-1")
    run_id = log_candidate(client, parent, approved_record(kind="sweep candidate")).run_id
    assert {f.path for f in client.list_artifacts(run_id)} == {"report.json", "report.md", "advice.json"}
    assert len(client.get_metric_history(run_id, "mini_run/loss")) == 4
