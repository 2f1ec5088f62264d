"""End to end: a sweep whose candidates run as deployment runs (`sweep.candidates_on: deployment`) on
a real `prefect server`, `prefect deploy --all` from prefect.yaml and a process worker on the `gpu`
pool; the sweep itself is `tunegate sweep` pointed at that server (PREFECT_API_URL).

good.yaml's two candidates: {lora.r: 4, lora.alpha: 8} approved and trained, {learning_rate: 1e4}
rejected by its mini-run, each gated, trained and logged in a `sweep-candidate` flow run the worker
started, its outcome read back from Prefect's result storage. Then the same sweep again with
`--launch-best --full-run-deployment full-run/full-run`: its candidates reused, the winner's spec
preflighted here and trained to the end by a `full-run` flow run on the gpu worker.
"""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest
import yaml

from tests.support.cli_flow import run_cli
from tests.support.prefect_stack import ROOT, PrefectStack

# ~80 s on the loaded 2-core machine, half of it the server and `prefect deploy`: make test-nightly
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.nightly]
FLOWS_DATA = ROOT / "tests" / "data" / "flows"


@pytest.fixture(scope="module")
def stack(tiny_cache, tmp_path_factory):
    """Server, both pools, every deployment of prefect.yaml, a worker on the gpu pool."""
    stack = PrefectStack(tmp_path_factory.mktemp("prefect-sweep-deployment"), os.environ["TUNEGATE_CACHE"])
    started = time.monotonic()
    try:
        stack.deploy_all(worker_pools=("gpu",))
        yield stack
    finally:
        problems = stack.stop()
        print(f"\nsweep-deployment stack: {time.monotonic() - started:.0f}s in all")
    assert problems == [], "\n".join(problems)


@pytest.fixture(scope="module")
def swept(stack, tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep-on-deployments")
    folder = root / "flows"
    shutil.copytree(FLOWS_DATA, folder)
    spec = yaml.safe_load((folder / "good.yaml").read_text())
    spec["sweep"].update(candidates_on="deployment", train_steps=2)
    (folder / "good.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    code = run_cli(["sweep", str(folder / "good.yaml"), "--json"], stack.env, root / "out", root / "err",
                   timeout=600)
    (dep,) = [d for d in stack.api("POST", "/deployments/filter", {}) if d["name"] == "sweep-candidate"]
    runs = stack.api("POST", "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [dep["id"]]}}})
    return {"code": code, "err": (root / "err").read_text(), "folder": folder,
            "summary": json.loads((root / "out").read_text() or "{}"), "runs": runs}


def test_the_sweep_completes_with_the_verdicts_it_has_on_threads(stack, swept):
    assert swept["code"] == 0, swept["err"][-3000:] + stack.diagnostics()
    good, diverging = swept["summary"]["outcomes"]
    assert good["approved"] and good["val_loss"] > 0 and not good["errored"]
    assert not diverging["approved"] and not diverging["errored"] and diverging["codes"]
    assert swept["summary"]["best"]["overrides"] == {"lora.r": 4, "lora.alpha": 8}


def test_each_candidate_ran_as_a_flow_run_of_the_deployment_on_the_gpu_pool(swept):
    runs = swept["runs"]
    assert len(runs) == 2 and {r["state_type"] for r in runs} == {"COMPLETED"}
    assert {r["work_pool_name"] for r in runs} == {"gpu"}
    assert sorted(json.dumps(r["parameters"]["overrides"], sort_keys=True) for r in runs) == sorted(
        json.dumps(o["overrides"], sort_keys=True) for o in swept["summary"]["outcomes"])
    assert {r["parameters"]["budget"]["train_steps"] for r in runs} == {2}


def test_the_candidates_are_logged_under_the_sweeps_parent(swept):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{swept['folder'] / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tunegate").experiment_id
    (parent,) = client.search_runs([exp], "tags.`tunegate.kind` = 'parent'")
    children = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert {c.info.run_name: c.info.status for c in children} == {"r4-a8": "FINISHED", "lr1e4": "FAILED"}
    assert parent.data.tags["tunegate.best_run"] == swept["summary"]["outcomes"][0]["run_id"]


@pytest.fixture(scope="module")
def launched(stack, swept):
    folder = swept["folder"]
    out, err = folder.parent / "launch-out", folder.parent / "launch-err"
    code = run_cli(["sweep", str(folder / "good.yaml"), "--json", "--launch-best", "--full-run-deployment",
                    "full-run/full-run"], stack.env, out, err, timeout=600)
    (dep,) = [d for d in stack.api("POST", "/deployments/filter", {}) if d["name"] == "full-run"]
    runs = stack.api("POST", "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [dep["id"]]}}})
    return {"code": code, "err": err.read_text(), "summary": json.loads(out.read_text() or "{}"), "runs": runs}


def test_the_winner_is_trained_to_the_end_by_the_full_run_deployment_on_the_gpu_pool(stack, swept, launched):
    assert launched["code"] == 0, launched["err"][-3000:] + stack.diagnostics()
    assert all(o["reused"] for o in launched["summary"]["outcomes"])
    launch = launched["summary"]["launch"]
    assert launch["completed"] and launch["full_run"] == "Completed"
    (run,) = launched["runs"]
    assert run["state_type"] == "COMPLETED" and run["work_pool_name"] == "gpu"
    assert run["parameters"]["spec_path"] == str(swept["folder"] / "good-best.yaml")
    assert (swept["folder"] / "out" / "full" / "adapter" / "COMPLETE").is_file()
