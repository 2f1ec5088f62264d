"""A real Prefect server and worker for the end-to-end test, and the cleanup that stops all of it.

Every process runs with its own temporary PREFECT_HOME. Cleanup stops the worker and then the
server by process group, then any process still carrying that PREFECT_HOME in its environment
(the worker starts flow runs in their own session, so a group kill alone would miss them).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from tests.support.paths import ROOT

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether any process listens on this TCP port of the machine."""
    try:
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in psutil.net_connections("tcp"))
    except psutil.AccessDenied:  # macOS needs root for the table: ask the port itself
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0


class PrefectStack:
    """A Prefect server on 127.0.0.1 with its own home, the CLI against it, and a worker."""

    def __init__(self, home: Path, tunegate_cache: str) -> None:
        self.home, self.logs = home, home / "logs"
        self.logs.mkdir(parents=True)
        self.port = free_port()
        self.procs: dict[str, subprocess.Popen] = {}
        self.deploy_output = ""  # what `prefect deploy` printed, for failure messages
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        db = f"sqlite+aiosqlite:///{home / 'prefect.db'}"
        env.update(PREFECT_HOME=str(home), PREFECT_SERVER_DATABASE_CONNECTION_URL=db,
                   PREFECT_API_DATABASE_CONNECTION_URL=db, PREFECT_SERVER_ANALYTICS_ENABLED="false",
                   MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1", PREFECT_WORKER_QUERY_SECONDS="1",
                   TUNEGATE_CACHE=tunegate_cache, COLUMNS="200",
                   # The flow runs import tasks/flows/tunegate from THIS checkout, not an installed copy.
                   PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))
        self.env = env
        self._set_port(self.port)

    def _set_port(self, port: int) -> None:
        self.port = port
        self.env["PREFECT_API_URL"] = self.url = f"http://127.0.0.1:{port}/api"

    # -- processes ----------------------------------------------------------------------------
    def spawn(self, name: str, *args: str) -> subprocess.Popen:
        """Start `prefect ARGS` in its own session, output to logs/NAME.log."""
        with open(self.logs / f"{name}.log", "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "prefect", *args], cwd=ROOT, env=self.env,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_server(self, timeout_s: float = 120, attempts: int = 3) -> None:
        """Start the server (a fresh port if the first was taken meanwhile) and wait for /api/health."""
        for _ in range(attempts):
            proc = self.spawn("server", "server", "start", "--host", "127.0.0.1", "--port", str(self.port),
                              "--no-ui", "--no-scheduler")  # no scheduler: nightly-sweep must not fire here
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and proc.poll() is None:
                if self.healthy():
                    return
                time.sleep(0.5)
            if proc.poll() is None:
                raise AssertionError(f"server not healthy after {timeout_s}s\n{self.diagnostics()}")
            if "address already in use" not in self.tail("server").lower():
                raise AssertionError(f"server exited with {proc.returncode}\n{self.diagnostics()}")
            self._set_port(free_port())
        raise AssertionError(f"no free port after {attempts} attempts\n{self.diagnostics()}")

    def deploy_all(self, worker_pools: tuple[str, ...] = ("cpu",)) -> None:
        """Server, the `cpu` and `gpu` process pools, every deployment of prefect.yaml, a worker per pool given."""
        self.start_server()
        for pool in ("cpu", "gpu"):
            self.cli("work-pool", "create", pool, "--type", "process")
        self.deploy_output = self.cli("deploy", "--all", "--no-prompt")
        for pool in worker_pools:
            self.spawn("worker" if pool == "cpu" else f"worker-{pool}", "worker", "start", "--pool", pool,
                       "--name", f"e2e-{pool}")

    def healthy(self) -> bool:
        try:
            return self.api("GET", "/health") is True
        except OSError:
            return False

    def cli(self, *args: str, timeout_s: float = 120) -> str:
        """Run `prefect ARGS` against the server; return its output; fail with it on a non-zero exit."""
        proc = subprocess.run([sys.executable, "-m", "prefect", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout_s)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"prefect {' '.join(args)} exited {proc.returncode}\n{out}"
        return out

    def api(self, method: str, path: str, body: Any = None, attempts: int = 5) -> Any:
        """One API call. A 503 (the server's SQLite busy under load: nothing was applied) is retried,
        as Prefect's own client retries it; every other error is raised at once."""
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(attempts):
            req = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    return json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as exc:
                if exc.code != 503 or attempt == attempts - 1:
                    raise
                time.sleep(1 + attempt)

    # -- flow runs ----------------------------------------------------------------------------
    def trigger(self, deployment: str, **params: Any) -> str:
        """`prefect deployment run` with JSON-encoded parameters; returns the flow run id."""
        args = [a for k, v in params.items() for a in ("-p", f"{k}={json.dumps(v)}")]
        out = self.cli("deployment", "run", deployment, *args)
        match = UUID_RE.search(out)
        assert match, f"no flow run id in:\n{out}"
        return match.group(0)

    def wait(self, flow_run_ids: list[str], timeout_s: float) -> dict[str, dict]:
        """Poll until every flow run is in a terminal state; return the runs as the API gives them."""
        deadline, runs = time.monotonic() + timeout_s, {}
        while time.monotonic() < deadline:
            runs = {i: self.api("GET", f"/flow_runs/{i}") for i in flow_run_ids}
            if all(r["state_type"] in TERMINAL for r in runs.values()):
                return runs
            time.sleep(1)
        states = {i: r.get("state_type") for i, r in runs.items()}
        raise AssertionError(f"flow runs not finished after {timeout_s}s: {states}\n{self.diagnostics()}")

    # -- diagnostics --------------------------------------------------------------------------
    def tail(self, name: str, lines: int = 80) -> str:
        path = self.logs / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def diagnostics(self) -> str:
        names = ["server", *sorted(n for n in self.procs if n != "server")]
        return "\n".join(f"----- {name} log (tail) -----\n{self.tail(name)}" for name in names)

    # -- cleanup ------------------------------------------------------------------------------
    def stop(self) -> list[str]:
        """Stop every process this stack started; return what is still alive or listening."""
        started = self._descendants()  # before the parents go: orphans are harder to find
        # The workers first, while the server still answers them.
        for name in [*sorted(n for n in self.procs if n != "server"), "server"]:
            if name in self.procs:
                _stop_group(self.procs[name])
        alive = _end([p for p in started | self._carrying_home() if _alive(p)])
        alive += [p for p in self._carrying_home() if p not in alive]
        problems = [f"still alive: {p.pid} {_cmdline(p)}" for p in alive]
        return problems + ([f"port {self.port} still listening"] if listening(self.port) else [])

    def _descendants(self) -> set[psutil.Process]:
        found = set()
        for proc in self.procs.values():
            try:
                found |= set(psutil.Process(proc.pid).children(recursive=True))
            except psutil.NoSuchProcess:
                continue
        return found

    def _carrying_home(self) -> set[psutil.Process]:
        """Processes (other than this one) whose environment holds this stack's PREFECT_HOME."""
        found = set()
        for proc in psutil.process_iter():
            try:
                if proc.pid != os.getpid() and proc.environ().get("PREFECT_HOME") == str(self.home):
                    found.add(proc)
            except (psutil.Error, OSError):  # other users' processes, or ones that just ended
                continue
        return found


def _stop_group(proc: subprocess.Popen, grace_s: float = 15) -> None:
    """SIGTERM the process group the process leads; SIGKILL it after the grace period; reap it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the group is gone; the leader may still need reaping
            pass
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _end(procs: list[psutil.Process], grace_s: float = 10) -> list[psutil.Process]:
    """Terminate, then kill, these processes; return those that survived both."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    return psutil.wait_procs(alive, timeout=grace_s)[1]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return "?"
