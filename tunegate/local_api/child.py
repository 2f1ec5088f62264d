"""The uvicorn child serving Prefect's API for tunegate (tunegate.local_api.app), and a command's
own one: `LocalApi`, started by a command and gone with it, when no shared API is wanted
(`TUNEGATE_LOCAL_API_IDLE_S=0`; tunegate.local_api.shared is the default).

    api = LocalApi()            # uvicorn starts on a free port of 127.0.0.1
    api.wait_ready()            # its health check answers
    api.stop()                  # terminate, 5 s, kill (also at exit)

The child is the one Prefect's ephemeral mode would start (`SubprocessASGIServer`: the same
command and environment), started before this process imports Prefect (tunegate.local_api.start).
A command's own child gets SIGTERM when the thread that started it (the main thread) dies,
however it dies, and is stopped at exit like Prefect's own.
"""
from __future__ import annotations

import atexit
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunegate.errors import ServiceUnavailable
from tunegate.local_api.db_template import prepare
from tunegate.local_api.setting_paths import absolute_settings, prefect_home
from tunegate.processes import on_parent_death

API_URL = "PREFECT_API_URL"
TIMEOUT = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
# What Prefect's SubprocessASGIServer adds to the child's environment (prefect 3.9: no UI, the
# ephemeral app's services, the app built once).
SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
TUNEGATE_DIR = Path(__file__).resolve().parents[2]  # the folder holding the tunegate package
logger = logging.getLogger(__name__)  # to the log file, as Prefect's own start and stop lines


class LocalApi:
    """The uvicorn child serving Prefect's API on 127.0.0.1 for this command."""

    def __init__(self) -> None:
        # The port stays bound here (SO_REUSEADDR, not listening: uvicorn's own bind still succeeds)
        # until the API answers, so no other process is handed it meanwhile.
        self._reserved = reserved_port()
        self.port = self._reserved.getsockname()[1]
        self.proc: subprocess.Popen | None = None
        # Its output, read back when it cannot start; on the terminal a failed start was a traceback.
        self._output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self._start()
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None

    def _start(self) -> None:
        logger.info(f"Starting temporary server on http://127.0.0.1:{self.port} (Prefect's local API, "
                    "started by tunegate before Prefect is imported)")
        # SIGTERM when this process dies, however it dies (elsewhere than Linux the atexit stop is all)
        env = server_env()
        self._prepared = prepare(env, Path.cwd())  # a fresh home: the template's copy
        self.proc = subprocess.Popen(server_command(self.port), env=env, stdout=self._output,
                                     stderr=subprocess.STDOUT, preexec_fn=on_parent_death(signal.SIGTERM))

    def wait_ready(self) -> None:
        """Block until the API answers its health check; ServiceUnavailable when it cannot start."""
        wait_until_healthy(self.url, lambda: self.proc.poll() if self.proc is not None else 1,
                           lambda: output_tail(self._output))
        self._reserved.close()
        if self._prepared is not None:  # a first start's database: the template for the next fresh home
            self._prepared.started()
            self._prepared = None

    def stop(self) -> None:
        """Terminate the child (as Prefect stops its ephemeral server) and reap it."""
        proc, self.proc = self.proc, None
        self._reserved.close()
        self._output.close()
        if proc is None or proc.poll() is not None:
            return
        logger.info(f"Stopping temporary server on http://127.0.0.1:{self.port}")
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_command(port: int) -> list[str]:
    """The uvicorn command serving Prefect's API through tunegate's app on 127.0.0.1:`port`."""
    return [sys.executable, "-m", "uvicorn", "--app-dir", str(TUNEGATE_DIR), "--factory",
            "tunegate.local_api.app:create_app", "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "error", "--lifespan", "on"]


def server_env(**extra: str) -> dict[str, str]:
    """The child's environment: this process's, as Prefect gives its ephemeral server, plus `extra`;
    Prefect's path settings absolute (a shared server runs in another folder: setting_paths)."""
    env = {**os.environ, **absolute_settings(os.environ), **SERVER_ENV, **extra}
    env.pop(API_URL, None)
    return env


def wait_until_healthy(url: str, exit_code: Callable[[], int | None], output: Callable[[], str],
                       log: Path | None = None) -> None:
    """Poll `url`'s health check until it answers. ServiceUnavailable when `exit_code()` says the
    server ended (the reason taken from its `output()`, which `log` holds) or past the start-up
    limit (Prefect's own setting, 120 s by default here): the environment's problem (its Prefect
    home, its settings), not the config's and not a bug of ours."""
    limit = float(os.environ.get(TIMEOUT) or 120)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        code = exit_code()
        if code is not None:
            raise ServiceUnavailable(cannot_start(code, output(), log))
        if healthy(url):
            return
        time.sleep(0.05)
    raise ServiceUnavailable(f"Prefect's local API did not answer within {limit:g} s; on a busy machine raise "
                             f"{TIMEOUT}, or set PREFECT_API_URL to a running Prefect server "
                             "(`prefect server start`)")


def cannot_start(code: int, output: str, log: Path | None = None) -> str:
    """Why the local API ended while starting, and what to check: the error it gave, its Prefect home."""
    reason = start_error(output)
    home = prefect_home(os.environ)
    return (f"Prefect's local API exited while starting (code {code})" + (f": {reason}" if reason else "")
            + f". Fix: PREFECT_HOME ({home}) must be a folder this user can write and the PREFECT_ settings "
            "ones `prefect server start` accepts; or set PREFECT_API_URL to a running Prefect server"
            + (f" (the server's output: {log})" if log is not None else ""))


# The last line of a Python traceback: the exception's dotted name at the line's start, then its message.
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(\w*(?:Error|Exception|Exit))\b:?\s*(.*)$")


def start_error(output: str) -> str:
    """The last exception a server's `output` shows ("OperationalError: ... unable to open database
    file"), or "" when it shows none."""
    for line in reversed(output.splitlines()[-400:]):
        found = _RAISED.match(line.strip())
        if found and line[:1] not in " \t":
            return f"{found.group(1)}: {found.group(2)}".rstrip(": ")[:300]
    return ""


def output_tail(file: Any, start: int = 0, size: int = 1 << 16) -> str:
    """The end of a server's output in `file` (binary, open), from byte `start` on: at most `size`
    bytes, "" when it cannot be read (closed meanwhile)."""
    try:
        end = file.seek(0, os.SEEK_END)
        file.seek(max(start, end - size))
        return file.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


def reserved_port() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def healthy(url: str, timeout: float = 2) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False
