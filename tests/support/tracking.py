"""Fixtures and builders shared by the tracking tests: a real SQLite MLflow store per test.

A fresh store runs MLflow's ~60 Alembic migrations (about 2 s here), so one store is initialised
per test module and each test gets a byte copy of it: a real, empty, current-schema store. The
tests about initialisation itself use truly fresh files.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tunegate.report import GateReport
from tunegate.spec.check import load_spec
from tunegate.spec.model import Spec
from tunegate.tracking.record import CandidateRecord, StepMetrics, record_from_report
from tunegate.tracking.store import ensure_store, open_client, sqlite_uri

ROOT_DIR = ROOT
DATA = ROOT_DIR / "tests" / "data" / "tracking"
EXPERIMENT = "tunegate-test"


@pytest.fixture(scope="module")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "mlflow.db"
    ensure_store(sqlite_uri(path))
    return path


@pytest.fixture
def store_uri(store_template: Path, tmp_path: Path) -> str:
    """A real, empty MLflow store in this test's tmp_path."""
    shutil.copyfile(store_template, tmp_path / "mlflow.db")
    return sqlite_uri(tmp_path / "mlflow.db")


@pytest.fixture
def client(store_uri: str):
    return open_client(store_uri)


def base_spec() -> Spec:
    return load_spec(DATA / "spec.yaml")


def with_changes(spec: Spec, **sections: dict) -> Spec:
    """The spec with some fields of some sections replaced, like a sweep candidate's overrides."""
    update = {name: getattr(spec, name).model_copy(update=fields) for name, fields in sections.items()}
    return spec.model_copy(update=update)


def report(name: str = "approved") -> GateReport:
    return GateReport.model_validate_json((DATA / f"report_{name}.json").read_text())


def steps(n: int, start_loss: float = 2.0) -> list[StepMetrics]:
    """A plausible mini-run: loss falling, grad norm settling."""
    return [StepMetrics(step=i, loss=start_loss * 0.97 ** i, grad_norm=1.0 + 1.0 / (i + 1)) for i in range(n)]


def approved_record(spec: Spec | None = None, n_steps: int = 4, val_loss: float = 1.8, **extra) -> CandidateRecord:
    fields = {"mini_run_steps": steps(n_steps), "tokens_per_s": 812.5, "peak_memory_gib": 3.25,
              "predicted_hours": 11.5, "final_train_loss": val_loss - 0.2, "val_loss": val_loss,
              "advice": {"changes": [{"key": "training.micro_batch_size", "to": 8}]}}
    return record_from_report(report("approved"), spec or base_spec(), **{**fields, **extra})


def other_validation(record: CandidateRecord, digest: str) -> CandidateRecord:
    """The same record as if it had been scored on another validation set."""
    datasets = [d.model_copy(update={"digest": digest}) if d.role == "validation" else d for d in record.datasets]
    params = {**record.params, "data.validation_digest": digest}
    return record.model_copy(update={"datasets": datasets, "params": params,
                                     "candidate_id": record.candidate_id[:-8] + "0ther000"})
