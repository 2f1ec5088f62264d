"""Flow-run heartbeats from the CLI (tunegate.cli.flow_runner): none to an API that dies with the
command (each cost a flow run's end up to 1 s), Prefect's own default or the user's frequency to
any other.

Each case runs in a fresh process, where Prefect reads its settings from the environment as the
CLI's does, and asks Prefect's flow engine itself how often it would beat.
"""
from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import ROOT

PROBE = ("from prefect import flow\n"
         "from prefect.flow_engine import FlowRunEngine\n"
         "from tunegate.cli.flow_runner import _no_heartbeats\n"
         "own = {own}\n"
         "with _no_heartbeats(own):\n"
         "    print(FlowRunEngine(flow=flow(lambda: None)).heartbeat_seconds)\n")


def _heartbeat_seconds(home, own_api: bool, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env = {**clean, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(home), **env}
    done = subprocess.run([sys.executable, "-c", PROBE.format(own=own_api)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-1]


def test_a_flow_on_the_commands_own_api_sends_no_heartbeats(tmp_path):
    assert _heartbeat_seconds(tmp_path, own_api=True) == "None"


def test_a_flow_on_a_server_that_outlives_the_command_keeps_prefects_default(tmp_path):
    assert _heartbeat_seconds(tmp_path, own_api=False) == "180"


def test_a_frequency_the_user_set_is_kept_even_on_the_commands_own_api(tmp_path):
    assert _heartbeat_seconds(tmp_path, own_api=True, PREFECT_FLOWS_HEARTBEAT_FREQUENCY="45") == "45"
