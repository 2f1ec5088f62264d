"""What the Prefect UI shows of a flow run: a name that says what it gates, tags with the model and
data version, a report artifact keyed per spec, and the findings in the run's own log."""
from __future__ import annotations

import hashlib
import shutil
from uuid import UUID

import pytest

from tunegate.tasks.names import report_artifact_key

pytestmark = pytest.mark.slow


def _flow_run(state):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(state.state_details.flow_run_id)


def _artifact(key: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))


def _log_lines(flow_run_id: UUID) -> list[tuple[int, str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=30)  # the log worker ships records in batches, in the background
    with get_client(sync_client=True) as client:
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    return [(log.level, log.message) for log in logs]


def test_a_preflight_run_is_named_and_tagged_for_what_it_gates(prefect_api, workdir):
    from tunegate.flows.preflight import preflight

    spec = workdir / "good.yaml"
    state = preflight(str(spec), mini_run=False, advisor=False, return_state=True)
    run = _flow_run(state)
    assert run.name == f"preflight-good-{hashlib.sha256(spec.read_bytes()).hexdigest()[:8]}"
    assert {"model:tunegate/tiny-llama", "data:flows-v1"} <= set(run.tags)


def test_each_spec_keeps_its_own_report_artifact_with_its_charts(prefect_api, workdir):
    from tunegate.flows.preflight import preflight

    other = workdir / "other"
    other.mkdir()
    for name in ("good.yaml", "train.jsonl", "validation.jsonl"):
        shutil.copy(workdir / name, other / name)
    for spec in (workdir / "good.yaml", other / "good.yaml"):
        preflight(str(spec), mini_run=False, advisor=False, return_state=True)
    keys = {report_artifact_key(workdir / "good.yaml"), report_artifact_key(other / "good.yaml")}
    assert len(keys) == 2  # same file name, two folders: two reports, neither overwritten
    for key in keys:
        [artifact] = _artifact(key)
        assert "# tunegate preflight" in artifact.data
        assert "![memory_breakdown.svg](data:image/svg+xml;base64," in artifact.data


def test_the_findings_are_in_the_flow_runs_log_one_line_each(prefect_api, workdir):
    import logging

    from tunegate.flows.preflight import preflight

    state = preflight(str(workdir / "bad_data.yaml"), mini_run=False, advisor=False, return_state=True)
    lines = _log_lines(state.state_details.flow_run_id)
    errors = [m for level, m in lines if level == logging.ERROR and " TG204 error: " in m]
    assert errors and errors[0].startswith(f"{workdir / 'bad_train.jsonl'}:") and "(fix: " in errors[0]
    assert "\n" not in errors[0]
    assert any(m.startswith("rejected at stage 'dataset': 1 error(s)") for _, m in lines)
