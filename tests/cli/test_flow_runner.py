"""The flow commands' process defaults: set before Prefect is imported, a value the user set is kept."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

ASK = ("import tunegate.cli.flow_runner\n"
       "from prefect._internal.analytics import is_telemetry_enabled\n"
       "import mlflow.environment_variables as ml\n"
       "print(is_telemetry_enabled(), ml.MLFLOW_DISABLE_TELEMETRY.get())\n")


def _said(**env: str) -> str:
    from prefect._internal.analytics.ci_detection import CI_ENV_VARS  # a CI runner turns Prefect's off itself

    clean = {k: v for k, v in os.environ.items() if k not in ("DO_NOT_TRACK", "MLFLOW_DISABLE_TELEMETRY", *CI_ENV_VARS)
             and not k.startswith("PREFECT_")}
    done = subprocess.run([sys.executable, "-c", ASK], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**clean, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_flow_command_sends_no_usage_events_to_prefect_or_mlflow():
    # Before: the server's and MLflow's were off, Prefect's client telemetry on ("True True").
    assert _said() == "False True"


def test_a_user_who_opts_in_is_not_overruled():
    assert _said(DO_NOT_TRACK="0", MLFLOW_DISABLE_TELEMETRY="false") == "True False"


def test_a_flow_failed_by_a_sigterm_python_wrapped_is_a_termination(prefect_api):
    # Measured: a sweep's SIGTERM landed in Prefect's validation of a subflow's parameters, which
    # builds a pydantic model; Python wrapped the TerminationSignal in a RuntimeError, the flow run
    # Failed, and the CLI said "internal error" (exit 3) with its MLflow runs left RUNNING.
    from prefect import flow
    from prefect.exceptions import TerminationSignal

    from tests.test_errors import raised_in_set_name
    from tunegate.cli.flow_runner import run_flow
    from tunegate.errors import Terminated

    @flow(name="cut-short")
    def cut_short() -> None:
        raise raised_in_set_name(TerminationSignal(15))

    with pytest.raises(Terminated) as raised:
        run_flow(cut_short)
    assert isinstance(raised.value.__cause__, RuntimeError)
