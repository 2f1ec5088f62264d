"""`tunegate api`: whether the shared local Prefect API runs on this Prefect home, and stopping it,
never under a command that uses it (tunegate.cli.api, tunegate.local_api.shared).

The server is real (started as a flow command starts it); it need not have finished starting to be
shown or stopped, so these tests do not wait for it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil

from tests.support.local_api import command_env, finish, record, start_command
from tests.support.paths import ROOT
from tunegate.local_api.state import Place


def tunegate_api(home, *args: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "tunegate", "api", *args, "--json"], cwd=ROOT,
                          env=command_env(home), capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


def test_api_says_when_none_runs(local_api_home):
    assert tunegate_api(local_api_home) == (1, {"state": "none", "home": str(local_api_home), "url": None,
                                                "pid": None, "up_s": None})


def test_api_stop_leaves_a_server_in_use_and_stops_it_once_unused(local_api_home):
    pid, url = finish(start_command(command_env(local_api_home), ready=False))
    code, shown = tunegate_api(local_api_home)
    assert code == 0 and shown["state"] == "running" and (shown["pid"], shown["url"]) == (int(pid), url)
    held = Place(local_api_home / "tunegate").use(record(local_api_home)["key"])  # as a flow command using it
    try:
        assert tunegate_api(local_api_home, "stop")[1]["state"] == "in use"
        assert psutil.pid_exists(int(pid))
    finally:
        os.close(held)  # the command ends
    code, stopped = tunegate_api(local_api_home, "stop")
    assert code == 0 and stopped["state"] == "stopped" and stopped["pid"] == int(pid)
    assert record(local_api_home) is None
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE
