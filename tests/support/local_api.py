"""Flow commands' first step, run as the commands run it, for the shared local API's tests
(tunegate.local_api.shared): `start_local_api()` and, when asked, `wait_ready()`, in a fresh
process on a Prefect home of the test's own."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.support.paths import ROOT

COMMAND = ("import logging, os, sys\n"
           "logging.basicConfig(level=logging.INFO)  # on stderr: which server it found, started or left\n"
           "from tunegate.local_api import start_local_api\n"
           "api = start_local_api()\n"
           "if api is None:\n"
           "    print('none', os.environ.get('PREFECT_API_URL'))\n"
           "    sys.exit(0)\n"
           "if sys.argv[1:] == ['ready']:\n"
           "    api.wait_ready()\n"
           "print(api.pid, api.url)\n")


def command_env(home: Path, idle_s: str = "600", **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return {**clean, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(home), "TUNEGATE_LOCAL_API_IDLE_S": idle_s,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
            **extra}


def start_command(env: dict[str, str], ready: bool = True, cwd: Path = ROOT) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", COMMAND, *(["ready"] if ready else [])], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> list[str]:
    out, err = proc.communicate(timeout=180)  # a server holding the pipes open would hang here
    assert proc.returncode == 0, err[-2000:]
    SAID[proc.pid] = err  # its log lines (a command that falls back to a server of its own says why)
    return out.split()


SAID: dict[int, str] = {}  # each finished command's stderr, by its pid


def said(*procs: subprocess.Popen) -> str:
    """What the finished commands wrote to stderr: a failing assertion's message."""
    return "\n".join(f"command {p.pid}: {SAID.get(p.pid, '')[-1500:]}" for p in procs)


def record(home: Path) -> dict | None:
    path = home / "tunegate" / "local-api.json"
    return json.loads(path.read_text()) if path.exists() else None


def servers_of(home: Path) -> list[psutil.Process]:
    """Local API servers running on `home` (whatever any record says)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if "tunegate.local_api.app:create_app" in proc.cmdline() and proc.environ().get("PREFECT_HOME") == str(home):
                found.append(proc)
        except psutil.Error:
            pass
    return found


@pytest.fixture
def local_api_home(tmp_path: Path):
    """A Prefect home of the test's own; every local API server left on it is killed afterwards."""
    home = tmp_path / "prefect-home"
    yield home
    for proc in servers_of(home):
        proc.send_signal(signal.SIGKILL)
