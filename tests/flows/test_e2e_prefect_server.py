"""End to end: a real `prefect server`, process work pools, `prefect deploy --all` from prefect.yaml,
a worker, and preflight runs triggered with `prefect deployment run`, tracked in MLflow.

The server, the worker and the flow runs it starts all use a temporary PREFECT_HOME; the specs are
copies of tests/data/flows in tmp, so MLflow's store and the reports land there, not in the repo.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support.prefect_stack import ROOT, PrefectStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLOWS_DATA = ROOT / "tests" / "data" / "flows"
RUN_TIMEOUT_S = 180
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis"}


def _tree(root: Path) -> set[str]:
    """Every file and folder under the checkout, except caches and the virtualenv."""
    found = set()
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        found |= {os.path.relpath(os.path.join(here, n), root) for n in dirs + files}
    return found


@pytest.fixture(scope="module")
def stack(tiny_cache, tmp_path_factory):  # noqa: F811  (fixture)
    """Server, `cpu` and `gpu` process pools, every deployment of prefect.yaml, a `cpu` worker."""
    stack = PrefectStack(tmp_path_factory.mktemp("prefect-e2e"), os.environ["TUNEGATE_CACHE"])
    stack.repo_before, started = _tree(ROOT), time.monotonic()
    try:
        stack.deploy_all()
        yield stack
    finally:
        stopping = time.monotonic()
        problems = stack.stop()
        done = time.monotonic()
        print(f"\ne2e stack: {done - started:.0f}s in all, cleanup {done - stopping:.0f}s")
    assert problems == [], "\n".join(problems)


@pytest.fixture(scope="module")
def runs(stack, tmp_path_factory):
    """An approved and a rejected spec (each in its own tmp copy), triggered together, waited for."""
    folders = {}
    for name, spec in (("good", "good.yaml"), ("bad", "bad_data.yaml")):
        folder = tmp_path_factory.mktemp(f"flows-{name}")
        shutil.copytree(FLOWS_DATA, folder, dirs_exist_ok=True)
        folders[name] = folder / spec
    ids = {name: stack.trigger("preflight/preflight", spec_path=str(spec)) for name, spec in folders.items()}
    finished = stack.wait(list(ids.values()), RUN_TIMEOUT_S)
    return {"folders": folders, "runs": {name: finished[i] for name, i in ids.items()},
            "new_in_repo": sorted(_tree(ROOT) - stack.repo_before)}


def _mlflow(spec: Path, flow_run_id: str):
    """The parent and candidate runs one flow run left in the MLflow store beside its spec."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{spec.parent / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate")
    mine = client.search_runs([exp.experiment_id], f"tags.`tunegate.flow_run_id` = '{flow_run_id}'")
    kinds = {}
    for run in mine:
        kinds.setdefault(run.data.tags["tunegate.kind"], []).append(run)
    return client, kinds


def test_deploy_all_registers_every_deployment_of_prefect_yaml_with_its_pool_and_settings(stack):
    declared = {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
    served = {d["name"]: d for d in stack.api("POST", "/deployments/filter", {})}
    assert sorted(served) == sorted(declared), stack.deploy_output
    for name, dep in served.items():
        assert dep["work_pool_name"] == declared[name]["work_pool"]["name"]
        assert dep["parameters"] == declared[name]["parameters"]
        assert dep["entrypoint"] == declared[name]["entrypoint"]
        # The process worker runs the flow from the folder `prefect deploy` ran in: this checkout.
        assert dep["pull_steps"] == [
            {"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}]
    assert [s["schedule"]["cron"] for s in served["nightly-sweep"]["schedules"]] == ["0 2 * * *"]
    assert {n: (d["global_concurrency_limit"] or {}).get("limit") for n, d in served.items()} == {
        "preflight": None, "nightly-sweep": None, "mini-run": 1, "full-run": 1, "sweep-candidate": 1}


def test_the_worker_environment_imports_this_checkout_not_an_installed_copy(stack, tmp_path):
    # The same interpreter and environment the worker hands its flow runs, from a foreign folder.
    code = ("import importlib.util, tunegate, tunegate.flows\n"
            "print(tunegate.__path__[0]); print(tunegate.flows.__path__[0])\n"
            "print(list(importlib.util.find_spec('tasks').submodule_search_locations))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=stack.env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()
    # tunegate's own tasks travel inside the package; the top-level tasks/ (the design card's layout,
    # thin shims like flows/) is this checkout's, never an installed copy: the package installs only
    # tunegate (pyproject.toml), so nothing named `tasks` lands in site-packages to shadow a user's.
    assert out == [str(ROOT / "tunegate"), str(ROOT / "tunegate" / "flows"), str([str(ROOT / "tasks")])]


def test_triggered_preflight_on_an_approved_spec_completes_on_the_cpu_worker(stack, runs):
    run = runs["runs"]["good"]
    assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.diagnostics()}"
    assert run["state"]["message"] == "approved for a full run: every required gate passed"
    assert run["work_pool_name"] == "cpu" and run["parameters"]["spec_path"] == str(runs["folders"]["good"])
    artifacts = stack.api("POST", "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run["id"]]}}})
    assert "markdown" in {a["type"] for a in artifacts}


def test_mlflow_holds_the_flow_runs_parent_and_its_candidate_with_params_and_mini_run_losses(stack, runs):
    from tunegate.dataset.fingerprint import fingerprint_file

    spec, run = runs["folders"]["good"], runs["runs"]["good"]
    client, kinds = _mlflow(spec, run["id"])
    (parent,), (child,) = kinds["parent"], kinds["candidate"]
    assert parent.info.status == child.info.status == "FINISHED"
    assert parent.data.tags["tunegate.flow"] == "preflight"
    assert parent.data.tags["tunegate.pid"] == str(run["infrastructure_pid"])  # the worker's flow-run process
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert child.data.tags["tunegate.verdict"] == "approved"
    params = child.data.params
    assert (params["model.id"], params["lora.r"], params["training.learning_rate"]) == (
        "tunegate/tiny-llama", "8", "0.0002")
    assert params["data.train_digest"] == fingerprint_file(spec.parent / "train.jsonl").digest
    assert params["data.validation_digest"] == fingerprint_file(spec.parent / "validation.jsonl").digest
    losses = client.get_metric_history(child.info.run_id, "mini_run/loss")
    assert sorted(m.step for m in losses) == [1, 2, 3]  # gate.mini_run.steps: 3, one loss per step
    assert all(math.isfinite(m.value) and m.value > 0 for m in losses)
    assert {"report.json", "loss_curve.svg"} <= {a.path for a in client.list_artifacts(child.info.run_id)}


def test_triggered_preflight_on_broken_data_ends_failed_naming_the_stage_and_logs_a_failed_candidate(
        stack, runs):
    spec, run = runs["folders"]["bad"], runs["runs"]["bad"]
    assert run["state_type"] == "FAILED", f"{run['state']}\n{stack.diagnostics()}"
    assert "stage 'dataset'" in run["state"]["message"]
    _, kinds = _mlflow(spec, run["id"])
    (child,) = kinds["candidate"]
    assert child.info.status == "FAILED"
    assert "TG204" in child.data.tags["tunegate.failing_codes"]


def test_deploying_and_running_write_nothing_into_the_checkout(runs):
    assert runs["new_in_repo"] == []
    for spec in runs["folders"].values():
        assert (spec.parent / "mlflow.db").is_file()
        assert (spec.parent / ".tunegate" / "reports" / f"{spec.stem}.json").is_file()
