"""When a server's process counts as ended (tunegate.local_api.state.has_ended): `tunegate api stop`
says "stopped" only then, so its port is free and nothing of it runs."""
import subprocess
import sys
import time

from tunegate.local_api.state import has_ended


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
