"""The user's shared local API (tunegate.local_api.shared): one server per Prefect home, found or
started by each flow command, gone by itself once idle.

Each command here is a fresh process doing what `tunegate sweep`/`preflight`/`launch` do first
(`start_local_api()`, then `wait_ready()`), on a Prefect home of the test's own; the servers are
real uvicorn processes serving Prefect's API. Whatever a test leaves running is stopped after it.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.paths import ROOT

COMMAND = ("import os, sys\n"
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


def start_command(env: dict[str, str], ready: bool = True) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", COMMAND, *(["ready"] if ready else [])], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> list[str]:
    out, err = proc.communicate(timeout=180)  # a server holding the pipes open would hang here
    assert proc.returncode == 0, err[-2000:]
    return out.split()


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
def home(tmp_path: Path):
    """A Prefect home of the test's own; every server left on it is stopped afterwards."""
    home = tmp_path / "prefect-home"
    yield home
    for proc in servers_of(home):
        proc.send_signal(signal.SIGKILL)


def test_two_commands_racing_start_one_server_and_a_later_one_reuses_it(home):
    env = command_env(home)
    first, second = start_command(env), start_command(env)
    (pid_a, url_a), (pid_b, url_b) = finish(first), finish(second)
    assert pid_a == pid_b and url_a == url_b
    assert [p.pid for p in servers_of(home)] == [int(pid_a)]
    began = time.monotonic()
    assert finish(start_command(env)) == [pid_a, url_a]  # the same server, already up
    assert time.monotonic() - began < 15  # no server start-up: one health check (and Python's start)
    assert record(home)["pid"] == int(pid_a)


def test_the_server_stops_by_itself_once_idle_and_forgets_its_record(home):
    pid, _ = finish(start_command(command_env(home, idle_s="1")))
    server = psutil.Process(int(pid))
    server.wait(timeout=60)  # 1 s idle, checked every 0.25 s, then uvicorn's graceful shutdown
    assert record(home) is None and servers_of(home) == []


def test_a_record_whose_server_is_gone_is_replaced(home):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (home / "tunegate").mkdir(parents=True)
    (home / "tunegate" / "local-api.json").write_text(json.dumps(
        {"pid": dead.pid, "port": 9, "key": "any", "started": time.time()}))
    pid, _ = finish(start_command(command_env(home), ready=False))
    assert int(pid) != dead.pid and record(home)["pid"] == int(pid)
    assert [p.pid for p in servers_of(home)] == [int(pid)]


def test_a_record_naming_another_process_is_not_taken_for_the_server(home):
    (home / "tunegate").mkdir(parents=True)
    (home / "tunegate" / "local-api.json").write_text(json.dumps(
        {"pid": os.getpid(), "port": 9, "key": "any", "started": time.time()}))
    pid, _ = finish(start_command(command_env(home), ready=False))
    assert int(pid) != os.getpid() and record(home)["pid"] == int(pid)
    assert psutil.pid_exists(os.getpid())  # the process the record named is left alone


def test_a_configured_prefect_api_url_is_used_untouched(home):
    url = "http://127.0.0.1:9/api"
    assert finish(start_command(command_env(home, PREFECT_API_URL=url))) == ["none", url]
    assert record(home) is None and servers_of(home) == []


def test_an_idle_time_of_zero_gives_the_command_a_server_that_dies_with_it(home):
    pid, _ = finish(start_command(command_env(home, idle_s="0"), ready=False))
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(int(pid)).wait(timeout=30)  # SIGTERM at the command's end
    assert record(home) is None and servers_of(home) == []


def test_an_idle_time_that_is_not_a_number_is_refused(home):
    done = subprocess.run([sys.executable, "-c", COMMAND], cwd=ROOT, env=command_env(home, idle_s="ten"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "TUNEGATE_LOCAL_API_IDLE_S='ten'" in done.stderr
    assert servers_of(home) == []
