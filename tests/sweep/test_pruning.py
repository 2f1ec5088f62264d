"""Pruning on real sweeps of the tiny model: the same sweep without pruning, with the median rule and
with ASHA; a pruned candidate is recorded as pruned, with its step and the steps it saved, and the
candidate that ends best without pruning is never the one pruned.

tests/data/flows/prune.yaml tries three learning rates, middle, worst, best (curves that never cross),
at a max_seq_len that cuts 22 records: the warnings travel with each verdict (the table, MLflow).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.flows import FLOWS_DATA

pytestmark = pytest.mark.slow


def _swept(folder: Path, runner: str = "threads", **sweep: Any) -> dict[str, Any]:
    """prune.yaml swept in a folder of its own (its own MLflow store: no candidate is reused)."""
    from tunegate.flows.sweep import sweep as sweep_flow

    shutil.copytree(FLOWS_DATA, folder)
    spec = yaml.safe_load((folder / "prune.yaml").read_text())
    spec["sweep"].update(sweep, task_runner=runner)
    path = folder / "prune.yaml"
    path.write_text(yaml.safe_dump(spec))
    state = sweep_flow(str(path), return_state=True)
    assert state.is_completed(), state.message
    return {**state.result(), "folder": folder}


def _runs(folder: Path) -> dict[str, Any]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    return {r.info.run_name: r for r in client.search_runs([exp], "tags.`tunegate.kind` = 'candidate'")}


def _lr(outcome: dict[str, Any]) -> float:
    return outcome["overrides"]["training.learning_rate"]


@pytest.fixture(scope="module")
def reference(prefect_api, tiny_cache, tmp_path_factory) -> dict[str, Any]:
    return _swept(tmp_path_factory.mktemp("no-pruning") / "flows")


@pytest.fixture(scope="module")
def median(prefect_api, tiny_cache, tmp_path_factory) -> dict[str, Any]:
    return _swept(tmp_path_factory.mktemp("median") / "flows", prune="median")


def test_without_pruning_every_candidate_trains_its_whole_budget(reference):
    assert [o["pruned_at_step"] for o in reference["outcomes"]] == [None] * 3
    assert reference["pruned"] == 0 and _lr(reference["best"]) == 3e-3


def test_the_median_rule_stops_the_worst_candidate_and_keeps_the_reference_best(reference, median):
    middle, worst, best = median["outcomes"]
    assert (middle["pruned_at_step"], worst["pruned_at_step"], best["pruned_at_step"]) == (None, 2, None)
    assert worst["steps_saved"] == 4 and median["steps_saved"] == 4 and median["pruned"] == 1
    assert worst["approved"] and "worse than the median" in worst["reason"]
    assert _lr(median["best"]) == _lr(reference["best"])
    assert median["best"]["val_loss"] == pytest.approx(reference["best"]["val_loss"], rel=1e-6)


def test_a_pruned_candidate_is_recorded_as_pruned_in_mlflow(median):
    runs = _runs(median["folder"])
    pruned = runs["lr1e-5"]
    assert pruned.info.status == "KILLED" and pruned.data.tags["tunegate.verdict"] == "pruned"
    assert (pruned.data.tags["tunegate.pruned_at_step"], pruned.data.tags["tunegate.steps_saved"]) == ("2", "4")
    assert "worse than the median" in pruned.data.tags["tunegate.killed_reason"]
    assert pruned.data.params["run.trained_steps"] == "2"
    assert runs["lr3e-3"].info.status == "FINISHED" and "tunegate.pruned_at_step" not in runs["lr3e-3"].data.tags


def test_each_candidate_logs_its_validation_curve_at_eval_every_steps(median):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{median['folder'] / 'mlflow.db'}")
    runs = _runs(median["folder"])
    assert [m.step for m in client.get_metric_history(runs["lr3e-3"].info.run_id, "eval/loss")] == [2, 4, 6]
    assert [m.step for m in client.get_metric_history(runs["lr1e-5"].info.run_id, "eval/loss")] == [2]


def test_the_sweep_table_says_pruned_with_the_step_and_the_steps_saved(median):
    from tunegate.sweep.summary import SweepSummary

    text = SweepSummary.model_validate({k: v for k, v in median.items() if k != "folder"}).text()
    assert "pruned" in text.splitlines()[2] and "pruned at step 2 of 6" in text
    assert "pruned: 1 candidate(s), 4 training step(s) saved" in text


def test_each_candidates_warnings_travel_with_its_verdict_truncation_first(median):
    from tunegate.sweep.summary import SweepSummary

    assert [list(o["warnings"].items())[:2] for o in median["outcomes"]] == [[("TG511", 22), ("TG512", 22)]] * 3
    row = SweepSummary.model_validate({k: v for k, v in median.items() if k != "folder"}).text().splitlines()[3]
    assert row.split()[1:2] == ["approved"] and "TG511 x22, TG512 x22" in row
    run = _runs(median["folder"])["lr3e-3"]
    assert run.data.tags["tunegate.warnings"].startswith("TG511 x22, TG512 x22")
    assert run.data.metrics["gate/warnings"] == sum(median["outcomes"][2]["warnings"].values())


def test_a_rerun_reuses_the_pruned_candidate_as_pruned(median):
    from tunegate.flows.sweep import sweep as sweep_flow

    again = sweep_flow(str(median["folder"] / "prune.yaml"), return_state=True).result()
    assert all(o["reused"] for o in again["outcomes"])
    assert [o["pruned_at_step"] for o in again["outcomes"]] == [None, 2, None]
    assert [o["warnings"] for o in again["outcomes"]] == [o["warnings"] for o in median["outcomes"]]
    assert _lr(again["best"]) == 3e-3


@pytest.mark.nightly  # a third sweep (~12 s quiet, 20 s under load); make test covers pruning with the median
def test_asha_stops_the_worst_candidate_at_the_first_rung_and_keeps_the_reference_best(
        reference, prefect_api, tiny_cache, tmp_path):
    swept = _swept(tmp_path / "flows", prune="asha", prune_eta=3)
    assert [o["pruned_at_step"] for o in swept["outcomes"]] == [None, 2, None]
    assert "not among the best 1 of the 2 candidate(s)" in swept["outcomes"][1]["reason"]
    assert _lr(swept["best"]) == _lr(reference["best"])


@pytest.mark.nightly  # ~40 s each here: a local cluster, and each training a cold process
@pytest.mark.parametrize("runner", ["dask", "ray"])
def test_pruning_on_dask_and_ray_workers_keeps_the_reference_best(reference, prefect_api, tiny_cache, tmp_path,
                                                                    runner):
    pytest.importorskip(f"prefect_{runner}")
    swept = _swept(tmp_path / "flows", runner, prune="median")
    assert [o["pruned_at_step"] for o in swept["outcomes"]] == [None, 2, None]
    assert _lr(swept["best"]) == _lr(reference["best"])
