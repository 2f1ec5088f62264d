"""Fixtures for flow tests: one Prefect test harness (a temporary API and database) per session,
and a private copy of the flow test data so each test's MLflow store and reports start empty."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.paths import DATA

FLOWS_DATA = DATA / "flows"


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory: pytest.TempPathFactory):
    from prefect.testing.utilities import prefect_test_harness

    home = tmp_path_factory.mktemp("prefect-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_HOME", str(home))
        mp.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        with prefect_test_harness(server_startup_timeout=120):
            yield


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of tests/data/flows (specs and data) in a fresh folder."""
    dest = tmp_path / "flows"
    shutil.copytree(FLOWS_DATA, dest)
    return dest
