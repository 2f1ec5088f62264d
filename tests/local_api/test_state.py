"""When a server's process counts as ended (tunegate.local_api.state.has_ended): `tunegate api stop`
says "stopped" only then, so its port is free and nothing of it runs. When a pid counts as the
local API's server (`is_server`): from the moment the command that started it has its pid."""
import subprocess
import sys
import time

from tunegate.local_api.state import APP, has_ended, is_server


def test_a_running_process_has_not_ended():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not has_ended(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_exited_unreaped_has_ended():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while not has_ended(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert has_ended(proc.pid) and proc.poll() == 0  # a zombie until poll reaps it


def test_a_reaped_process_has_ended():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert has_ended(proc.pid)


def _started(*argv: str) -> subprocess.Popen:
    """A process started as the shared API's is (its own session, no pipes), argv after `python -c`."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", *argv], start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_server_is_known_as_one_from_the_moment_its_starter_has_its_pid():
    # Right after Popen returns the new program may not have its arguments in place yet (its command
    # line reads empty: 85 of 300 starts here); a command racing the starter read the record then and
    # took the server for dead (CI, sessions 45 and 47: two servers started).
    for _ in range(40):
        proc = _started(APP.decode())
        try:
            assert is_server(proc.pid)
        finally:
            proc.kill()
            proc.wait()


def test_another_program_under_the_pid_is_no_server():
    proc = _started("tunegate.local_api.app")
    try:
        assert not is_server(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert not is_server(proc.pid)  # gone
