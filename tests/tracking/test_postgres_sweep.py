"""A sweep into a team's MLflow through the CLI: `tracking.mlflow_uri` is an mlflow server on PostgreSQL.

The module starts a throwaway PostgreSQL cluster and an mlflow server on it (tests/support/
postgres_server.py), runs a 2-candidate sweep two at a time through the CLI as a user does, reads
everything back through the server with MlflowClient and straight from PostgreSQL with psql, then
stops both servers. Every assertion reads what that one run left.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_flow import cli_env, run_cli
from tests.support.flows import FLOWS_DATA
from tests.support.postgres_server import PostgresMlflow, read_back, run_inputs_in_postgres, runs_in_postgres

# 3.6-4.5 min on the shared 2-core machine (server 57-68 s, sweep 119-150 s): make test-nightly; make test runs
# tests/tracking/test_postgres_server.py (the same server, candidates logged without training).
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.nightly]
EXPERIMENT = "team-sweep"


def _sweep_spec(folder: Path, uri: str) -> Path:
    """tests/data/flows/three.yaml cut to two candidates, evaluated two at a time, tracked on `uri`."""
    spec = yaml.safe_load((folder / "three.yaml").read_text())
    spec["sweep"].update(candidates=spec["sweep"]["candidates"][:2], max_parallel=2, task_runner="threads")
    spec["tracking"] = {"mlflow_uri": uri, "experiment": EXPERIMENT}
    path = folder / "team.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def team_sweep(tiny_cache, tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("team-mlflow")
    folder = root / "flows"
    shutil.copytree(FLOWS_DATA, folder)
    out, err = root / "sweep.out", root / "sweep.err"
    started = time.monotonic()
    with PostgresMlflow.start() as server:
        print(f"postgres + mlflow server up in {time.monotonic() - started:.1f} s")
        spec = _sweep_spec(folder, server.uri)
        started = time.monotonic()
        code = run_cli(["sweep", str(spec), "--json"], cli_env(root / "prefect-home"), out, err)
        print(f"the sweep took {time.monotonic() - started:.1f} s")
        found = {"code": code, "err": err.read_text()[-4000:] + server.tail(20),
                 "summary": json.loads(out.read_text()) if code == 0 else None,
                 **read_back(server.uri, EXPERIMENT, root / "downloads"),
                 "pg_runs": runs_in_postgres(server, EXPERIMENT), "pg_inputs": run_inputs_in_postgres(server)}
    found.update(leftovers=server.leftovers(), server_root=server.root, folder=folder)
    return found


def _candidates(found: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in found["runs"] if r["tags"].get("tunegate.kind") == "candidate"]


def test_the_sweep_into_the_team_server_approves_both_candidates(team_sweep):
    assert team_sweep["code"] == 0, team_sweep["err"]
    outcomes = team_sweep["summary"]["outcomes"]
    assert len(outcomes) == 2 and all(o["approved"] for o in outcomes), outcomes


def test_every_candidate_and_the_parent_are_on_the_server(team_sweep):
    parents = [r for r in team_sweep["runs"] if r["tags"].get("tunegate.kind") == "parent"]
    assert len(parents) == 1 and len(_candidates(team_sweep)) == 2
    assert {r["tags"].get("mlflow.parentRunId") for r in _candidates(team_sweep)} == {parents[0]["id"]}
    assert {o["run_id"] for o in team_sweep["summary"]["outcomes"]} == {r["id"] for r in _candidates(team_sweep)}


def test_each_candidate_has_its_verdict_val_loss_and_both_datasets(team_sweep):
    for run in _candidates(team_sweep):
        assert run["tags"]["tunegate.verdict"] == "approved"
        assert run["metrics"]["val/loss"] > 0
        digests = {tags["mlflow.data.context"]: tags["tunegate.digest"] for tags in run["inputs"]}
        assert sorted(digests) == ["training", "validation"]
        assert digests["training"] == run["tags"]["tunegate.train_digest"] == team_sweep["summary"]["train_digest"]
        assert digests["validation"] == run["tags"]["tunegate.validation_digest"]


def test_the_artifacts_are_served_by_the_server(team_sweep):
    # proxied through the server (mlflow-artifacts:), not a path on the client's disk
    assert team_sweep["artifact_location"].startswith("mlflow-artifacts:")
    for run in _candidates(team_sweep):
        assert {"report.json", "report.md"} <= set(run["artifacts"])
        assert run["report"]["approved_for_full_run"] is True


def test_no_run_is_left_running(team_sweep):
    assert [r["id"] for r in team_sweep["runs"] if r["status"] == "RUNNING"] == []


def test_the_runs_and_their_inputs_are_rows_in_postgresql(team_sweep):
    assert team_sweep["pg_runs"] == {"FINISHED": 3}  # the parent and both candidates
    assert team_sweep["pg_inputs"] >= 4  # two datasets per candidate


def test_nothing_is_written_beside_the_spec(team_sweep):
    # the SQLite default is not used behind the user's back
    assert not (team_sweep["folder"] / "mlflow.db").exists()
    assert not (team_sweep["folder"] / "mlartifacts").exists()


def test_stopping_leaves_no_postgres_or_mlflow_process(team_sweep):
    assert team_sweep["leftovers"] == []
    assert not team_sweep["server_root"].exists()
