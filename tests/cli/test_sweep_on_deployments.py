"""`sweep.candidates_on: deployment` needs a Prefect server: without one, `tunegate sweep` says so and
what to start, before any flow runs (exit 2), and starts no local API for a sweep that cannot use it."""
from __future__ import annotations

import shutil

import yaml

from tests.support.cli_flow import cli_env, run_cli
from tests.support.paths import DATA


def test_deployment_candidates_without_a_prefect_server_are_a_usage_error(tmp_path):
    shutil.copytree(DATA / "flows", tmp_path / "flows")
    spec = yaml.safe_load((tmp_path / "flows" / "good.yaml").read_text())
    spec["sweep"]["candidates_on"] = "deployment"
    (tmp_path / "flows" / "good.yaml").write_text(yaml.safe_dump(spec))
    code = run_cli(["sweep", str(tmp_path / "flows" / "good.yaml")], cli_env(tmp_path / "home"),
                   tmp_path / "out", tmp_path / "err", timeout=300)
    err = (tmp_path / "err").read_text()
    assert code == 2, err
    assert "sweep-candidate/sweep-candidate" in err and "PREFECT_API_URL" in err
    assert not (tmp_path / "home" / "prefect.db").exists()  # no local API was started for it
    assert not (tmp_path / "flows" / "mlflow.db").exists()


def test_full_run_deployment_without_launch_best_is_a_usage_error(tmp_path):
    code = run_cli(["sweep", str(DATA / "flows" / "good.yaml"), "--full-run-deployment", "full-run/full-run"],
                   cli_env(tmp_path / "home"), tmp_path / "out", tmp_path / "err", timeout=300)
    assert code == 2 and "add --launch-best" in (tmp_path / "err").read_text()
