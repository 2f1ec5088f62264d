"""Prefect's local API for a command that runs a flow (`tunegate sweep`, `preflight`, `launch`),
started before this process imports Prefect at all.

    api = start_local_api()     # the command's first step: uvicorn starts, PREFECT_API_URL names it
    ...                         # everything else meanwhile (imports, the data gate's start)
    api.wait_ready()            # just before the flow's first call to the API

Without a configured server Prefect starts an ephemeral API itself (`SubprocessASGIServer`): a
uvicorn child serving `prefect.server.api.server:create_app` on Prefect's home, started only
once the flow needs it and only after this process has imported Prefect's server module (4.4 CPU
s on the 2-core machine, for nothing but the class that starts the child; issue 15). Here the same
child, with the same command and environment Prefect gives it, starts as soon as the command
knows it will run a flow, and `PREFECT_API_URL` is set to it before Prefect is imported, so
Prefect uses it as any configured server and never imports its server module here. The child
serves Prefect's app through `tunegate.local_api.app`, which runs a request the SQLite store
refused for a write conflict again at once rather than after the client's 2 s backoff.

Only when Prefect would start an ephemeral API itself: no `PREFECT_API_URL` in the environment
and ephemeral mode not switched off there. A URL (or ephemeral mode off) set in a Prefect profile
or `prefect.toml` is only known once Prefect's settings are read; `adopt_or_stop` checks that,
and there a configured server wins: this child is stopped and Prefect's settings are read again
without it. The child gets SIGTERM when the thread that started it (the main thread) dies, and
is stopped at exit like Prefect's own (terminate, 5 s, kill).
"""
from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tunegate.processes import on_parent_death

API_URL = "PREFECT_API_URL"
EPHEMERAL = "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"
TIMEOUT = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
# What Prefect's SubprocessASGIServer adds to the child's environment (prefect 3.9: no UI, the
# ephemeral app's services, the app built once).
SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
_FALSE = {"0", "false", "no", "off"}
TUNEGATE_DIR = Path(__file__).resolve().parents[2]  # the folder holding the tunegate package
_STARTED: list[LocalApi] = []  # what start_local_api started in this process
logger = logging.getLogger("tunegate.local_api")  # the log file, as Prefect's own start and stop lines


class LocalApi:
    """The uvicorn child serving Prefect's API on 127.0.0.1 for this command."""

    def __init__(self) -> None:
        # The port stays bound here (SO_REUSEADDR, not listening: uvicorn's own bind still succeeds)
        # until the API answers, so no other process is handed it meanwhile.
        self._reserved = _reserved_port()
        self.port = self._reserved.getsockname()[1]
        self.proc: subprocess.Popen | None = None
        self._start()
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def _start(self) -> None:
        cmd = [sys.executable, "-m", "uvicorn", "--app-dir", str(TUNEGATE_DIR), "--factory",
               "tunegate.local_api.app:create_app", "--host", "127.0.0.1", "--port", str(self.port),
               "--log-level", "error", "--lifespan", "on"]
        env = {**os.environ, **SERVER_ENV}
        env.pop(API_URL, None)
        logger.info(f"Starting temporary server on http://127.0.0.1:{self.port} (Prefect's local API, "
                    "started by tunegate before Prefect is imported)")
        # SIGTERM when this process dies, however it dies (elsewhere than Linux the atexit stop is all)
        self.proc = subprocess.Popen(cmd, env=env, preexec_fn=on_parent_death(signal.SIGTERM))

    def wait_ready(self) -> None:
        """Block until the API answers its health check; RuntimeError when it cannot start (as
        Prefect's own start: the command reports it as an internal error, exit 3)."""
        limit = float(os.environ.get(TIMEOUT) or 120)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            code = self.proc.poll() if self.proc is not None else 1
            if code is not None:
                raise RuntimeError(f"Prefect's local API exited with code {code} while starting")
            if _healthy(self.url):
                self._reserved.close()
                return
            time.sleep(0.05)
        raise RuntimeError(f"Prefect's local API did not answer within {limit:g} s")

    def stop(self) -> None:
        """Terminate the child (as Prefect stops its ephemeral server) and reap it."""
        proc, self.proc = self.proc, None
        self._reserved.close()
        if proc is None or proc.poll() is not None:
            return
        logger.info(f"Stopping temporary server on http://127.0.0.1:{self.port}")
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serving() -> bool:
    """Whether the API this process talks to (PREFECT_API_URL) is a local API it started and runs."""
    return any(api.proc is not None and os.environ.get(API_URL) == api.url for api in _STARTED)


def start_local_api() -> LocalApi | None:
    """Start Prefect's local API now and point PREFECT_API_URL at it, when Prefect would start an
    ephemeral one itself; None when the environment names a server, ephemeral mode is off there,
    Prefect is not installed, or Prefect is already imported (its settings are read)."""
    if os.environ.get(API_URL) or os.environ.get(EPHEMERAL, "true").strip().lower() in _FALSE:
        return None
    if "prefect" in sys.modules:
        return None
    if importlib.util.find_spec("prefect") is None:
        return None
    api = LocalApi()
    os.environ[API_URL] = api.url
    _STARTED.append(api)
    return api


def adopt_or_stop(api: LocalApi | None) -> LocalApi | None:
    """After Prefect is imported: keep the local API unless Prefect's other settings sources (a
    profile, prefect.toml, .env) name a server or switch ephemeral mode off; then stop it and
    rebuild Prefect's root settings without it. Returns the API kept, or None."""
    if api is None:
        return None
    from prefect.settings import Settings

    ours = os.environ.pop(API_URL)
    try:
        elsewhere = Settings()
    finally:
        os.environ[API_URL] = ours
    if not elsewhere.api.url and elsewhere.server.ephemeral.enabled:
        return api
    os.environ.pop(API_URL)
    api.stop()
    import prefect.context

    prefect.context.GLOBAL_SETTINGS_CONTEXT = prefect.context.root_settings_context()
    return None


def _reserved_port() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False
