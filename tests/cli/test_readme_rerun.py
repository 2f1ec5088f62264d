"""The README's commands as a new user runs them, then again in a COPY of the project: the record
stays true (`python -m tunegate ...`, each in its own process, Prefect's local API, real MLflow).

Measured before: the copy's runs wrote into the original project's mlartifacts; a second preflight
left an empty parent; a second launch trained again but `tunegate runs` kept the first run's
numbers. The quickstart is cut to the smallest run (2 training steps on the built-in tiny model).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli_flow import cli_env, run_cli
from tests.support.paths import EXAMPLES

# ~150 s on the shared 2-core machine (four flow commands, each its own process): `make test-nightly`.
# `make test` holds the same behaviours, faster, in tests/tracking/test_reruns.py and test_artifact_root.py.
pytestmark = [pytest.mark.slow, pytest.mark.nightly]


@dataclass
class Project:
    original: Path
    copy: Path
    launches: list[dict]
    runs_text: str
    original_artifacts: set[Path]
    artifacts_before_copy: set[Path]


def _tunegate(args: list[str], folder: Path, home: Path) -> str:
    out, err = folder / "stdout", folder / "stderr"
    code = run_cli(args, cli_env(home), out, err)
    assert code == 0, f"tunegate {' '.join(args)} exited {code}: {err.read_text()[-3000:]}"
    return out.read_text()


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_cache) -> Project:
    root = tmp_path_factory.mktemp("readme-rerun")
    original, home = root / "original", root / "prefect-home"
    shutil.copytree(EXAMPLES, original, ignore=shutil.ignore_patterns("mlflow.db*", ".tunegate", "mlartifacts"))
    spec = original / "quickstart.yaml"
    spec.write_text(spec.read_text().replace("epochs: 3", "max_steps: 2"))  # the smallest full run
    launches = []
    _tunegate(["preflight", str(spec)], root, home)
    launches.append(json.loads(_tunegate(["launch", str(spec)], root, home)))
    before = _files(original / "mlartifacts")
    copy = root / "copy"
    shutil.copytree(original, copy)  # the whole project: its store, its artifacts, its approval
    _tunegate(["preflight", str(copy / "quickstart.yaml")], root, home)
    launches.append(json.loads(_tunegate(["launch", str(copy / "quickstart.yaml")], root, home)))
    runs_text = _tunegate(["runs", "--spec", str(copy / "quickstart.yaml")], root, home)
    return Project(original, copy, launches, runs_text, _files(original / "mlartifacts"), before)


def _runs(folder: Path) -> list[dict]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tunegate")
    return [{"id": r.info.run_id, "name": r.info.run_name, "tags": r.data.tags, "metrics": r.data.metrics,
             "artifacts": r.info.artifact_uri, "start": r.info.start_time, "end": r.info.end_time}
            for r in client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])]


def test_the_copy_writes_nothing_into_the_original(project):
    assert project.original_artifacts == project.artifacts_before_copy
    with sqlite3.connect(project.copy / "mlflow.db") as db:
        (location,) = db.execute("SELECT artifact_location FROM experiments WHERE name = 'tunegate'").fetchone()
    assert location == (project.copy / "mlartifacts").resolve().as_uri()
    assert all(r["artifacts"].startswith(location) for r in _runs(project.copy))


def test_every_parent_holds_what_it_did_and_is_named_for_it(project):
    runs = _runs(project.copy)
    parents = [r for r in runs if r["tags"]["tunegate.kind"] == "parent"]
    children = {p["id"]: [r for r in runs if r["tags"].get("mlflow.parentRunId") == p["id"]] for p in parents}
    assert sorted(p["name"] for p in parents) == ["full run quickstart"] * 2 + ["preflight quickstart"] * 2
    assert all(len(c) == 1 for c in children.values())  # no empty parent, each rerun a run of its own


def test_each_rerun_supersedes_the_earlier_run_and_shows_its_own_numbers(project):
    runs = [r for r in _runs(project.copy) if r["tags"]["tunegate.kind"] == "candidate"]
    for kind in ("preflight quickstart", "full run quickstart"):
        first, second = [r for r in runs if r["name"] == kind]
        assert first["tags"]["tunegate.superseded_by"] == second["id"]
        assert "tunegate.superseded_by" not in second["tags"]
    latest_full = [r for r in runs if r["name"] == "full run quickstart"][-1]
    assert latest_full["metrics"]["val/loss"] == pytest.approx(project.launches[-1]["val_loss"])
    # its MLflow duration is its training, also kept as a metric
    assert latest_full["end"] - latest_full["start"] == pytest.approx(latest_full["metrics"]["train/duration_s"]
                                                                      * 1000, abs=2)


def test_tunegate_runs_lists_the_latest_first_and_the_earlier_as_superseded(project):
    runs = [r for r in _runs(project.copy) if r["tags"]["tunegate.kind"] == "candidate"]
    first_full, second_full = [r for r in runs if r["name"] == "full run quickstart"]
    lines = project.runs_text.splitlines()
    latest = next(i for i, line in enumerate(lines) if second_full["id"][:8] in line)
    earlier = next(i for i, line in enumerate(lines) if first_full["id"][:8] in line)
    assert latest < earlier and f"superseded by {second_full['id'][:8]}" in lines[earlier]
    assert "workflowType=machine_learning" in project.runs_text
