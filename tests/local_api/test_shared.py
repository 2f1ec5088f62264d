"""The user's shared local API (tunegate.local_api.shared): one server per Prefect local_api_home, found or
started by each flow command, gone by itself once idle.

Each command here is a fresh process doing what `tunegate sweep`/`preflight`/`launch` do first
(`start_local_api()`, then `wait_ready()`), on a Prefect home of the test's own; the servers are
real uvicorn processes serving Prefect's API. Whatever a test leaves running is stopped after it.
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time

import psutil

from tests.support.local_api import COMMAND, command_env, finish, record, said, servers_of, start_command
from tests.support.paths import ROOT

def test_two_commands_racing_start_one_server_and_a_later_one_reuses_it(local_api_home):
    env = command_env(local_api_home)
    first, second = start_command(env), start_command(env)
    (pid_a, url_a), (pid_b, url_b) = finish(first), finish(second)
    # In CI (sessions 45, 47) the second took the first's server, still in its exec, for dead (test_state.py)
    assert pid_a == pid_b and url_a == url_b, said(first, second)
    assert [p.pid for p in servers_of(local_api_home)] == [int(pid_a)]
    began = time.monotonic()
    assert finish(start_command(env)) == [pid_a, url_a]  # the same server, already up
    assert time.monotonic() - began < 15  # no server start-up: one health check (and Python's start)
    assert record(local_api_home)["pid"] == int(pid_a)


def test_the_server_stops_by_itself_once_idle_and_forgets_its_record(local_api_home):
    pid, _ = finish(start_command(command_env(local_api_home, idle_s="1")))
    server = psutil.Process(int(pid))
    server.wait(timeout=60)  # 1 s idle, checked every 0.25 s, then uvicorn's graceful shutdown
    assert record(local_api_home) is None and servers_of(local_api_home) == []


def test_a_record_whose_server_is_gone_is_replaced(local_api_home):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (local_api_home / "tunegate").mkdir(parents=True)
    (local_api_home / "tunegate" / "local-api.json").write_text(json.dumps(
        {"pid": dead.pid, "port": 9, "key": "any", "started": time.time()}))
    pid, _ = finish(start_command(command_env(local_api_home), ready=False))
    assert int(pid) != dead.pid and record(local_api_home)["pid"] == int(pid)
    assert [p.pid for p in servers_of(local_api_home)] == [int(pid)]


def test_a_record_naming_another_process_is_not_taken_for_the_server(local_api_home):
    (local_api_home / "tunegate").mkdir(parents=True)
    (local_api_home / "tunegate" / "local-api.json").write_text(json.dumps(
        {"pid": os.getpid(), "port": 9, "key": "any", "started": time.time()}))
    pid, _ = finish(start_command(command_env(local_api_home), ready=False))
    assert int(pid) != os.getpid() and record(local_api_home)["pid"] == int(pid)
    assert psutil.pid_exists(os.getpid())  # the process the record named is left alone


def test_a_server_that_stays_silent_past_its_start_up_with_no_user_is_replaced(local_api_home):
    env = command_env(local_api_home, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    pid, _ = finish(start_command(env, ready=False))
    hung = psutil.Process(int(pid))
    hung.suspend()  # SIGSTOP: alive, its port bound (or not yet), answering nothing
    time.sleep(1.5)
    new_pid, _ = finish(start_command(env, ready=False))
    assert new_pid != pid and record(local_api_home)["pid"] == int(new_pid)
    hung.wait(timeout=30)  # stopped by the command that replaced it


def test_a_configured_prefect_api_url_is_used_untouched(local_api_home):
    url = "http://127.0.0.1:9/api"
    assert finish(start_command(command_env(local_api_home, PREFECT_API_URL=url))) == ["none", url]
    assert record(local_api_home) is None and servers_of(local_api_home) == []


def test_an_idle_time_of_zero_gives_the_command_a_server_that_dies_with_it(local_api_home):
    pid, _ = finish(start_command(command_env(local_api_home, idle_s="0"), ready=False))
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(int(pid)).wait(timeout=30)  # SIGTERM at the command's end
    assert record(local_api_home) is None and servers_of(local_api_home) == []


def test_an_idle_time_that_is_not_a_number_is_refused(local_api_home):
    done = subprocess.run([sys.executable, "-c", COMMAND], cwd=ROOT, env=command_env(local_api_home, idle_s="ten"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "TUNEGATE_LOCAL_API_IDLE_S='ten'" in done.stderr
    assert servers_of(local_api_home) == []


def test_a_server_of_other_settings_that_no_command_uses_is_stopped_by_the_next_command(local_api_home):
    # Its key differs (another PREFECT_ setting, as another checkout's code would): once the record
    # names the new server nobody could find the old one, which would idle on for 600 s.
    old, _ = finish(start_command(command_env(local_api_home, PREFECT_LOGGING_LEVEL="WARNING")))
    new, _ = finish(start_command(command_env(local_api_home), ready=False))
    assert new != old and record(local_api_home)["pid"] == int(new)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(int(old)).wait(timeout=30)
    assert [p.pid for p in servers_of(local_api_home)] == [int(new)]


def test_a_server_of_other_settings_that_a_command_still_uses_is_left_running(local_api_home):
    holding = subprocess.Popen([sys.executable, "-c", COMMAND.replace("print(api.pid, api.url)\n", "print(api.pid, "
                                "api.url, flush=True)\nimport time; time.sleep(120)\n"), "ready"], cwd=ROOT,
                               env=command_env(local_api_home, PREFECT_LOGGING_LEVEL="WARNING"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        old = holding.stdout.readline().split()[0]
        new, _ = finish(start_command(command_env(local_api_home), ready=False))
        assert new != old and record(local_api_home)["pid"] == int(new)
        assert psutil.Process(int(old)).is_running()  # its command still talks to it
    finally:
        holding.kill()
        holding.wait()


def test_a_prefect_home_named_relative_to_the_command_folder_is_the_servers_home_too(local_api_home):
    # The server runs in the home's tunegate folder: given the relative path as it was, it looked for
    # its database under that folder (tmp/prefect-home/tunegate/tmp/prefect-home/prefect.db), could
    # not open it and exited with code 3, which the command reported as an internal error.
    relative = f"{local_api_home.parent.name}/{local_api_home.name}"
    pid, _ = finish(start_command(command_env(local_api_home, PREFECT_HOME=relative), cwd=local_api_home.parent.parent))
    assert record(local_api_home)["pid"] == int(pid)
    assert (local_api_home / "prefect.db").is_file()
    assert [p.pid for p in servers_of(local_api_home)] == [int(pid)]


def test_one_home_named_relative_then_absolute_is_one_server(local_api_home):
    first, _ = finish(start_command(command_env(local_api_home, PREFECT_HOME=local_api_home.name),
                                    cwd=local_api_home.parent))
    assert finish(start_command(command_env(local_api_home), ready=False))[0] == first


def test_a_server_that_cannot_start_is_the_environments_error_with_its_reason(local_api_home, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    env = command_env(local_api_home, PREFECT_API_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{blocked}/prefect.db")
    proc = start_command(env)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1  # the helper's uncaught error; a command turns it into exit 2
    assert "ServiceUnavailable: Prefect's local API exited while starting" in err
    assert "unable to open database file" in err and str(local_api_home / "tunegate" / "local-api.log") in err
    assert servers_of(local_api_home) == []


def test_a_fresh_home_starts_from_the_database_the_first_start_on_a_fresh_home_kept(local_api_home, tmp_path):
    # A first start migrates the whole schema (~10 s, ~10 CPU s here); the next fresh home copies its result.
    cache = tmp_path / "cache"
    finish(start_command(command_env(local_api_home, TUNEGATE_CACHE=str(cache))))
    [template] = (cache / "prefect-db").glob("prefect-*.db")
    second = tmp_path / "second-home"
    finish(start_command(command_env(second, idle_s="0", TUNEGATE_CACHE=str(cache)), ready=False))
    with sqlite3.connect(template) as kept, sqlite3.connect(second / "prefect.db") as seeded:
        revision = "SELECT version_num FROM alembic_version"
        assert seeded.execute(revision).fetchall() == kept.execute(revision).fetchall() != []
        assert seeded.execute("SELECT count(*) FROM flow_run").fetchone() == (0,)
        # The copy's block catalogue is the one its start would register: not written again (~0.6 s).
        catalogue = "SELECT * FROM block_type ORDER BY slug"
        assert seeded.execute(catalogue).fetchall() == kept.execute(catalogue).fetchall() != []


def test_a_restart_on_a_home_a_start_noted_runs_no_migrations_and_answers(local_api_home, tmp_path):
    # The home's first start migrates it (no template in this cache yet) and notes it once it answered.
    cache = str(tmp_path / "cache")
    finish(start_command(command_env(local_api_home, idle_s="0", TUNEGATE_CACHE=cache)))
    with sqlite3.connect(local_api_home / "prefect.db") as db:
        [(revision,)] = db.execute("SELECT version_num FROM alembic_version").fetchall()
    assert (local_api_home / "tunegate" / "prefect.db.catalogue").read_text().endswith(f"\n{revision}")
    deadline = time.monotonic() + 60
    while servers_of(local_api_home) and time.monotonic() < deadline:  # idle 0: it ends with its command
        time.sleep(0.2)
    assert servers_of(local_api_home) == []  # else the next command would find it, not start one
    pid, _ = finish(start_command(command_env(local_api_home, TUNEGATE_CACHE=cache)))  # the restart: it answered
    settings = psutil.Process(int(pid)).environ()
    assert settings["PREFECT_API_DATABASE_MIGRATE_ON_START"] == "false"
    assert settings["PREFECT_API_BLOCKS_REGISTER_ON_START"] == "false"
