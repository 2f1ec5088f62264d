"""The sweep flow: data stages once, every candidate gated, rejected ones logged, none aborts it."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_sweep_scores_good_candidates_and_logs_the_diverging_one_as_rejected(prefect_api, tiny_cache, workdir):
    from mlflow import MlflowClient

    from tunegate.flows.sweep import sweep

    state = sweep(str(workdir / "good.yaml"), return_state=True)
    assert state.is_completed(), state.message
    summary = state.result()
    good, diverging = summary["outcomes"]
    assert good["approved"] and good["val_loss"] > 0
    assert not diverging["approved"] and diverging["reason"]
    assert summary["best"]["overrides"] == {"lora.r": 4, "lora.alpha": 8}
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    parent = client.search_runs([exp], "tags.`tunegate.kind` = 'parent'")[0]
    children = client.search_runs([exp], "tags.`tunegate.kind` = 'candidate'")
    assert {c.info.status for c in children} == {"FINISHED", "FAILED"}
    assert parent.data.tags["tunegate.best_run"] == good["run_id"]
    assert any(a.path == "best_spec.yaml" for a in client.list_artifacts(parent.info.run_id))


def test_rerun_of_a_finished_sweep_reuses_every_candidate(prefect_api, tiny_cache, workdir):
    from tunegate.flows.sweep import sweep

    first = sweep(str(workdir / "good.yaml"), return_state=True).result()
    second = sweep(str(workdir / "good.yaml"), return_state=True).result()
    assert [o["run_id"] for o in second["outcomes"]] == [o["run_id"] for o in first["outcomes"]]
    assert all(o["reused"] for o in second["outcomes"])


def test_nomad_sweep_treats_the_diverging_region_as_infeasible_and_finds_a_feasible_best(
        prefect_api, tiny_cache, workdir):
    from mlflow import MlflowClient

    from tunegate.flows.sweep import sweep

    state = sweep(str(workdir / "nomad.yaml"), return_state=True)
    assert state.is_completed(), state.message
    summary = state.result()
    rejected = [o for o in summary["outcomes"] if not o["approved"]]
    assert len(summary["outcomes"]) == 5
    assert rejected and all("TG516" in o["codes"] for o in rejected)
    best = summary["best"]["overrides"]["training.learning_rate"]
    assert best < 1.0 and summary["best"]["val_loss"] > 0
    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    failed = client.search_runs([exp], "tags.`tunegate.kind` = 'candidate' and attributes.status = 'FAILED'")
    assert len(failed) == len(rejected)
    assert "TG516" in failed[0].data.tags["tunegate.failure_reason"]
