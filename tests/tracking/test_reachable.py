"""A tracking server that is down is said at once, naming the URI and the fix; never MLflow's
four minutes of retries ending in a traceback (253 s measured with mlflow 3.17.2)."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tunegate.errors import EXIT_USAGE, ServiceUnavailable
from tunegate.tracking.reachable import check_reachable
from tunegate.tracking.redaction import MASK
from tunegate.tracking.store import ensure_store

PASSWORD = "db-canary-5e1f0c2a9b"


def _unused_port() -> int:
    """A port nothing listens on: bound, then released (nothing on this test binds it again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_down_server_is_unavailable_naming_the_uri_and_how_to_start_it():
    port = _unused_port()
    with pytest.raises(ServiceUnavailable) as caught:
        check_reachable(f"http://127.0.0.1:{port}")
    message = str(caught.value)
    assert f"http://127.0.0.1:{port}" in message and "does not answer" in message
    assert "mlflow server" in message and "tracking.mlflow_uri" in message


def test_the_store_is_not_opened_on_a_down_server(tmp_path):
    # MLflow's own client would retry for minutes, then raise MlflowException
    with pytest.raises(ServiceUnavailable, match="does not answer"):
        ensure_store(f"http://127.0.0.1:{_unused_port()}")


def test_a_down_database_is_named_without_its_password():
    uri = f"postgresql://team:{PASSWORD}@127.0.0.1:{_unused_port()}/mlflow"
    with pytest.raises(ServiceUnavailable) as caught:
        check_reachable(uri)
    assert PASSWORD not in str(caught.value) and f"team:{MASK}@127.0.0.1" in str(caught.value)


def test_a_listening_port_passes():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_reachable(f"http://127.0.0.1:{server.getsockname()[1]}")


@pytest.mark.parametrize("uri", ["sqlite:////tmp/mlflow.db", "file:///tmp/mlruns", "databricks"])
def test_a_store_without_a_network_host_is_not_probed(uri):
    check_reachable(uri)


def test_tunegate_runs_on_a_down_server_exits_2_with_the_uri_and_no_traceback():
    uri = f"http://127.0.0.1:{_unused_port()}"
    proc = subprocess.run([sys.executable, "-m", "tunegate", "runs", "--tracking-uri", uri], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert uri in proc.stderr and "does not answer" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_postgresql_store_without_its_driver_names_the_extra(monkeypatch):
    from tunegate.errors import MissingDependency

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails as if not installed
    with socket.socket() as db:
        db.bind(("127.0.0.1", 0))
        db.listen()
        with pytest.raises(MissingDependency, match=r"tunegate\[postgres\]"):
            ensure_store(f"postgresql://team@127.0.0.1:{db.getsockname()[1]}/mlflow")
