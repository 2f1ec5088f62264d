"""A throwaway PostgreSQL cluster and an `mlflow server` on it: a team's tracking server, for one test module.

    with PostgresMlflow.start() as server:        # skips (naming .ci/run) when initdb is not installed
        server.uri                                 # http://127.0.0.1:<port>: what a spec's tracking.mlflow_uri holds
        server.sql("SELECT count(*) FROM runs")    # what really landed in PostgreSQL
    server.leftovers()                             # [] once stopped: no postgres or mlflow process survives

PostgreSQL refuses to run as root, and CI runs as root: the cluster then belongs to the `postgres`
system user Debian's package creates, and every server-side command runs through `runuser`. The
cluster listens on 127.0.0.1 and a socket folder of its own, both fresh, so it never meets a
system cluster. The database password travels as PGPASSWORD (libpq reads it), never in a URI.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.prefect_stack import free_port

DB_USER, DB_NAME = "tunegate", "mlflow"
SKIP_REASON = ("PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql/*/bin); "
               "`bash .ci/run` installs Debian's postgresql package")


def pg_bin(debian_root: Path = Path("/usr/lib/postgresql")) -> Path | None:
    """The folder holding initdb/pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<newest>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent  # /usr/local/bin may link initdb alone
    versions = sorted(debian_root.glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return versions[-1].parent if versions else None


class PostgresMlflow:
    """One PostgreSQL cluster (its own folder, port and socket) and one mlflow server on it."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.root, self.bin = root, bin_dir
        self.data, self.socket, self.artifacts = root / "pgdata", root / "socket", root / "artifacts"
        self.pg_port, self.port = free_port(), free_port()
        self.password = secrets.token_urlsafe(16)
        self.as_root = os.geteuid() == 0
        self.mlflow: subprocess.Popen | None = None
        self.pids: set[int] = set()  # every server process seen, checked by leftovers()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.backend_uri = f"postgresql://{DB_USER}@127.0.0.1:{self.pg_port}/{DB_NAME}"

    @classmethod
    @contextlib.contextmanager
    def start(cls, timeout_s: float = 180) -> Iterator[PostgresMlflow]:
        """Start the cluster and the server; stop both on the way out, whatever happened."""
        bin_dir = pg_bin()
        if bin_dir is None:
            pytest.skip(SKIP_REASON)
        # Not under pytest's tmp folders: those are private to root, and the postgres user must enter.
        server = cls(Path(tempfile.mkdtemp(prefix="tunegate-pg-")), bin_dir)
        try:
            server._start_postgres()
            server._start_mlflow(timeout_s)
            yield server
        finally:
            server.stop()

    # -- environment ---------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """What a client of the database needs: the password as PGPASSWORD, no MLflow settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PG"))}
        env.update(PGPASSWORD=self.password, MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1")
        return env

    def _pg(self, tool: str, *args: str) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{tool} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc

    # -- start ---------------------------------------------------------------------------------
    def _start_postgres(self) -> None:
        self.socket.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.as_root:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.socket, "postgres")
            shutil.chown(pwfile, "postgres")
        pwfile.chmod(0o600)
        # TCP asks for the password (scram), as a team's server does; the socket is for our own tools.
        self._pg("initdb", "-D", str(self.data), "-U", DB_USER, "--pwfile", str(pwfile), "--auth-host=scram-sha-256",
                 "--auth-local=trust", "-E", "UTF8", "--locale=C")
        pwfile.unlink()
        options = f"-p {self.pg_port} -k {self.socket} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "postgres.log"), "-w", "start")
        self.pids.add(self.postmaster_pid())
        self._pg("createdb", "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", DB_USER, DB_NAME)

    def _start_mlflow(self, timeout_s: float) -> None:
        self.artifacts.mkdir()
        log = open(self.root / "mlflow.log", "wb")  # noqa: SIM115 - the server writes it until stop()
        self.mlflow = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri,
             "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", "1"],  # one process: requests run in its threads; a second only costs start-up
            env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.root)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.mlflow.poll() is None, f"mlflow server exited {self.mlflow.returncode}\n{self.tail()}"
            self._note_pids()
            if self.healthy():
                return
            time.sleep(0.5)
        raise AssertionError(f"mlflow server not healthy after {timeout_s}s\n{self.tail()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.uri + "/health", timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False

    # -- inspect -------------------------------------------------------------------------------
    def sql(self, query: str) -> list[tuple[str, ...]]:
        """Rows of `query`, run by psql over TCP with the password, as any client of the database."""
        cmd = [str(self.bin / "psql") if (self.bin / "psql").exists() else "psql",
               "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", DB_USER, "-d", DB_NAME, "-At", "-F", "\t",
               "-c", query]
        proc = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"psql exited {proc.returncode}\n{proc.stderr}"
        return [tuple(line.split("\t")) for line in proc.stdout.splitlines()]

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])

    def tail(self, lines: int = 60) -> str:
        parts = []
        for name in ("mlflow.log", "postgres.log"):
            path = self.root / name
            text = path.read_text(errors="replace") if path.exists() else ""
            parts.append(f"--- {name}\n" + "\n".join(text.splitlines()[-lines:]))
        return "\n".join(parts)

    def _note_pids(self) -> None:
        for pid in (self.mlflow.pid,) if self.mlflow else ():
            try:
                proc = psutil.Process(pid)
                self.pids.update([pid, *(c.pid for c in proc.children(recursive=True))])
            except psutil.Error:
                pass
        with contextlib.suppress(OSError, ValueError):
            postmaster = psutil.Process(self.postmaster_pid())
            self.pids.update([postmaster.pid, *(c.pid for c in postmaster.children(recursive=True))])

    # -- stop ----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop mlflow (its whole process group), then PostgreSQL (fast shutdown); remove the folder."""
        self._note_pids()
        if self.mlflow is not None and self.mlflow.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.mlflow.pid, signal.SIGTERM)
            try:
                self.mlflow.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.mlflow.pid, signal.SIGKILL)
                self.mlflow.wait(timeout=30)
        if (self.data / "postmaster.pid").exists():
            self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self._wait_gone(30)
        shutil.rmtree(self.root, ignore_errors=True)

    def _wait_gone(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.2)

    def leftovers(self) -> list[int]:
        """The server processes (mlflow's and PostgreSQL's) still alive."""
        alive = []
        for pid in self.pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.Error:
                pass
        return sorted(alive)


def read_back(uri: str, experiment: str, downloads: Path) -> dict:
    """Every run of `experiment` as the server gives it: status, tags, metrics, dataset inputs, artifacts.

    Each run's report.json is downloaded through the server (into `downloads`) and parsed.
    """
    import json

    from mlflow import MlflowClient

    from tunegate.tracking.runs import search_all

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    runs = []
    for run in search_all(client, [found.experiment_id]):
        run_id = run.info.run_id
        artifacts = [a.path for a in client.list_artifacts(run_id)]
        report = None
        if "report.json" in artifacts:
            local = client.download_artifacts(run_id, "report.json", str(downloads / run_id))
            report = json.loads(Path(local).read_text())
        runs.append({"id": run_id, "status": run.info.status, "tags": dict(run.data.tags),
                     "metrics": dict(run.data.metrics), "artifacts": artifacts, "report": report,
                     "inputs": [{t.key: t.value for t in d.tags} for d in run.inputs.dataset_inputs]})
    return {"artifact_location": found.artifact_location, "runs": runs}


def runs_in_postgres(server: PostgresMlflow, experiment: str) -> dict[str, int]:
    """{status: count} of the experiment's rows in PostgreSQL's `runs` table, read with psql."""
    rows = server.sql("SELECT r.status, count(*) FROM runs r JOIN experiments e ON r.experiment_id = "
                      f"e.experiment_id WHERE e.name = '{experiment}' GROUP BY r.status")
    return {status: int(n) for status, n in rows}


def run_inputs_in_postgres(server: PostgresMlflow) -> int:
    """How many dataset inputs PostgreSQL holds for runs."""
    return int(server.sql("SELECT count(*) FROM inputs WHERE destination_type = 'RUN'")[0][0])
