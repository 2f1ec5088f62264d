"""A sweep run as a user runs it (`python -m tunegate sweep SPEC`, its own process, Prefect's
ephemeral API): what reaches the terminal, the log file, the Prefect UI and the MLflow UI.

Measured before: Prefect's banner, its state lines, MLflow's "Creating initial MLflow database
tables" and the sweep table (printed twice) all reached the user's terminal; every report
overwrote one `tunegate-report` artifact; flow runs had random names; experiments opened in
MLflow 3's GenAI layout; comparing candidates meant expanding every parent run.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli_flow import cli_env, run_cli
from tests.support.paths import DATA

pytestmark = pytest.mark.slow
CHATTER = ["Starting temporary server", "Beginning flow run", "Finished in state", "Creating initial MLflow",
           "FutureWarning", " | INFO ", "Traceback"]


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str
    log: str
    home: Path
    work: Path


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory, tiny_cache) -> Ran:
    root = tmp_path_factory.mktemp("sweep-experience")
    work, home = root / "work", root / "prefect-home"
    shutil.copytree(DATA / "flows", work)
    out, err = root / "stdout", root / "stderr"
    code = run_cli(["sweep", str(work / "three.yaml")], cli_env(home), out, err)
    log = home / "tunegate.log"
    return Ran(code, out.read_text(), err.read_text(), log.read_text() if log.exists() else "", home, work)


def test_the_terminal_gets_the_table_once_and_no_library_chatter(sweep_run):
    assert sweep_run.code == 0, sweep_run.stderr[-3000:]
    assert sweep_run.stderr == ""
    assert sweep_run.stdout.count("verdict   val loss") == 1 and sweep_run.stdout.count("best: ") == 1
    assert not [c for c in CHATTER if c in sweep_run.stdout]


def test_the_chatter_is_in_the_log_file(sweep_run):
    assert "Starting temporary server" in sweep_run.log and "Finished in state Completed" in sweep_run.log


def _prefect(sweep_run: Ran, sql: str) -> list[tuple]:
    with sqlite3.connect(sweep_run.home / "prefect.db") as db:
        return db.execute(sql).fetchall()


def test_each_candidate_and_the_sweep_have_their_own_artifact(sweep_run):
    keys = sorted(k for (k,) in _prefect(sweep_run, "select key from artifact where key is not null"))
    candidates = [k for k in keys if k.startswith("tunegate-candidate-three-")]
    assert len(candidates) == 3 and len(set(candidates)) == 3
    [(data,)] = _prefect(sweep_run, "select data from artifact where key like 'tunegate-sweep-three-%'")
    markdown = json.loads(data) if data.startswith('"') else data
    assert "3 of 3 candidate(s) approved" in markdown
    assert "![val_loss_per_candidate.svg](data:image/svg+xml;base64," in markdown
    assert "![loss_curves.svg](data:image/svg+xml;base64," in markdown


def test_the_flow_run_is_named_and_tagged_for_what_it_gates(sweep_run):
    runs = dict(_prefect(sweep_run, "select name, tags from flow_run"))
    [name] = [n for n in runs if n.startswith("sweep-three-")]
    assert len(name) == len("sweep-three-") + 8
    assert {"model:tunegate/tiny-llama", "data:flows-v1"} <= set(json.loads(runs[name]))
    # the candidates' subflow (issue 16) carries the same spec and digest in its name
    assert sorted(runs) == sorted([name, name.replace("sweep-", "sweep-candidates-", 1)])


def test_the_experiment_opens_as_model_training_with_val_loss_per_candidate_on_the_parent(sweep_run):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{sweep_run.work / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tunegate")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    [parent] = client.search_runs([experiment.experiment_id], "tags.`tunegate.kind` = 'parent'")
    points = client.get_metric_history(parent.info.run_id, "candidates/val_loss")
    assert sorted(p.step for p in points) == [1, 2, 3]
    names = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"val_loss_per_candidate.svg", "loss_curves.svg"} <= names


def test_verbose_shows_the_library_lines_on_stderr(tmp_path, tiny_cache):
    work, home = tmp_path / "work", tmp_path / "prefect-home"
    shutil.copytree(DATA / "flows", work)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    code = run_cli(["preflight", str(work / "good.yaml"), "--no-mini-run", "--no-advisor", "--verbose"],
                   cli_env(home), out, err)
    assert code == 0
    stderr = err.read_text()
    assert "Starting temporary server" in stderr and "Finished in state" in stderr
    assert out.read_text().startswith("[1/")  # the report itself stays on stdout
