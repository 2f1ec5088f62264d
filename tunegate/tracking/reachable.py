"""Whether a tracking server (or database) named by a URI answers, asked once, quickly.

MLflow retries a refused connection with backoff for about four minutes (253 s measured here
with mlflow 3.17.2 on an unused port) and then raises its own exception with a traceback. A
down server is not a verdict on anyone's config: it is said at once, naming the URI (without any
password in it) and the fix.
"""
from __future__ import annotations

import socket
from urllib.parse import urlsplit

from tunegate.errors import ServiceUnavailable
from tunegate.tracking.redaction import uri_without_password

CONNECT_TIMEOUT_S = 10
DEFAULT_PORTS = {"http": 80, "https": 443, "postgresql": 5432, "mysql": 3306, "mssql": 1433}


def check_reachable(uri: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise ServiceUnavailable (exit 2: the environment's problem, not a bug) unless the host and port
    of `uri` accept a TCP connection.

    URIs without a network host (a SQLite file, `file:`, `databricks`) are not probed.
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+", 1)[0]  # postgresql+psycopg -> postgresql
    if not parts.hostname or scheme not in DEFAULT_PORTS:
        return
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:  # a port that is not a number
        raise ServiceUnavailable(f"the tracking URI {uri_without_password(uri)} has no usable port; "
                         "fix tracking.mlflow_uri in the spec") from None
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            return
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    raise ServiceUnavailable(
        f"the MLflow tracking server {uri_without_password(uri)} does not answer ({reason}); "
        "nothing was tracked. Start it (e.g. `mlflow server --backend-store-uri postgresql://... "
        f"--host {parts.hostname} --port {port}`, see deployments/README.md), fix tracking.mlflow_uri "
        "in the spec, or remove it to track in mlflow.db beside the spec.")
