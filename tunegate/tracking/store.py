"""Where runs are tracked: resolve the MLflow tracking URI and make the store safe to share.

    uri = resolve_tracking_uri(spec, "examples/quickstart.yaml")   # sqlite:///<spec folder>/mlflow.db
    ensure_store(uri)                                               # once, before candidates fan out
    client = open_client(uri)
    experiment_id = ensure_experiment(client, spec.tracking.experiment, uri)

Why the lock: several processes opening a FRESH `sqlite:///mlflow.db` at once all run MLflow's
Alembic migrations and break the file for good (`duplicate column name: step`; 0 of 8 processes
succeeded in our reproduction with mlflow 3.17.2). Once the schema exists, parallel writers are
fine (MLflow sets a 20 s SQLite busy timeout). So the store is created or upgraded exactly once,
under a file lock, before any candidate starts.

MLflow is imported inside the functions: the static stages must not pay for it.
"""
from __future__ import annotations

import ipaddress
import os
import shutil
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tunegate.errors import UsageError

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from tunegate.spec.model import Spec

# Set to 1 to allow a plain-http tracking server that is not on this machine (research §5).
ALLOW_INSECURE_ENV = "TUNEGATE_ALLOW_INSECURE_TRACKING"
DEFAULT_DB = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
# MLflow 3 types an experiment by this tag: GenAI (traces, evaluations) or model training (runs,
# charts). MLflow's APIs and tools read it; the 3.17 UI takes its layout from its own "GenAI /
# Model training" switch (the `workflowType=machine_learning` URL parameter, remembered in the
# browser), so `tunegate runs` prints links that set it.
KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = {KIND_TAG: "custom_model_development"}
# A fresh store's migrations take ~2 s here; a minute covers a slow disk with room to spare.
LOCK_TIMEOUT_S = 120


def resolve_tracking_uri(spec: Spec | None, spec_path: str | Path | None,
                         allow_insecure: bool = False) -> str:
    """The tracking URI for a spec: `tracking.mlflow_uri`, else `sqlite:///<spec folder>/mlflow.db`.

    A relative SQLite path in `tracking.mlflow_uri` resolves against the spec's folder, like every
    other path in the spec.

    Raises:
        UsageError: the URI is plain http to another machine and no override was given.
    """
    base = Path(spec_path).resolve().parent if spec_path is not None else Path.cwd()
    uri = spec.tracking.mlflow_uri if spec is not None else None
    if not uri:
        return sqlite_uri(base / DEFAULT_DB)
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return sqlite_uri(base / uri[len("sqlite:///"):])
    check_tracking_uri(uri, allow_insecure)
    return uri


def check_tracking_uri(uri: str, allow_insecure: bool = False) -> None:
    """Refuse `http://` to a host other than this machine: params and reports would cross the
    network unencrypted to a server whose auth we cannot see. https and loopback are fine.
    """
    parts = urlsplit(uri)
    if parts.scheme != "http" or _is_loopback(parts.hostname or ""):
        return
    if allow_insecure or os.environ.get(ALLOW_INSECURE_ENV) == "1":
        return
    raise UsageError(
        f"refusing tracking URI {parts.scheme}://{parts.hostname}: plain http to another machine "
        "sends run data unencrypted and unauthenticated. Use https behind an authenticating proxy, "
        f"or set {ALLOW_INSECURE_ENV}=1 if this network is trusted.")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sqlite_uri(path: Path) -> str:
    """`sqlite:///` + an absolute path (four slashes in total on POSIX)."""
    return "sqlite:///" + str(path.resolve())


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI, or None for any other store."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):].split("?", 1)[0])


def ensure_store(uri: str) -> None:
    """Create or upgrade the tracking store once, under a file lock; safe to call from many processes.

    An out-of-date SQLite schema is backed up beside the file (`mlflow.db.bak-<revision>`) before
    it is upgraded, as MLflow asks. Non-SQLite stores are only opened (a server owns its schema).
    """
    path = sqlite_path(uri)
    if path is None:
        open_client(uri).search_experiments(max_results=1)
        return
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
        _init_sqlite(uri, path)


def _init_sqlite(uri: str, path: Path) -> None:
    if path.is_file() and path.stat().st_size > 0:
        _upgrade_if_old(uri, path)
    # The first query builds MLflow's store, which creates every table on a fresh file.
    open_client(uri).search_experiments(max_results=1)


def _upgrade_if_old(uri: str, path: Path) -> None:
    """Back up, then upgrade, a store an older MLflow created (MLflow itself refuses to open it)."""
    import sqlalchemy
    from mlflow.store.db.utils import _get_latest_schema_revision, _get_schema_version, _upgrade_db

    engine = sqlalchemy.create_engine(uri)
    try:
        current = _get_schema_version(engine)
        if current is None or current == _get_latest_schema_revision():
            return
        _sqlite_backup(path, path.with_name(f"{path.name}.bak-{current}"))
        _upgrade_db(engine)
    finally:
        engine.dispose()


def _sqlite_backup(src: Path, dst: Path) -> None:
    """A consistent copy through SQLite's backup API (a plain copy could miss the -wal file)."""
    if dst.exists():
        return
    with sqlite3.connect(src) as source, sqlite3.connect(dst) as target:
        source.backup(target)
    shutil.copymode(src, dst)


def open_client(uri: str) -> MlflowClient:
    """An explicit MlflowClient for `uri`. Thread-safe, unlike the fluent API's thread-local run."""
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def ensure_experiment(client: MlflowClient, name: str, uri: str) -> str:
    """The id of experiment `name`, created if missing, with its artifacts pinned beside a SQLite store.

    Without a pinned location MLflow puts artifacts in `./mlruns` under whatever folder the process
    happened to start in, so one sweep's artifacts would scatter across working directories.
    """
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        path = sqlite_path(uri)
        location = (path.parent / ARTIFACTS_DIR).resolve().as_uri() if path else None
        try:
            return client.create_experiment(name, artifact_location=location, tags=EXPERIMENT_KIND)
        except MlflowException as exc:  # another process created it between our two calls
            found = client.get_experiment_by_name(name)
            if found is None:
                raise exc
    if found.lifecycle_stage == "deleted":
        raise UsageError(f"MLflow experiment '{name}' is deleted; restore it "
                         f"(`mlflow experiments restore --experiment-id {found.experiment_id}`) "
                         "or set tracking.experiment to another name")
    if KIND_TAG not in found.tags:  # made before tunegate set it; a kind the user chose is kept
        client.set_experiment_tag(found.experiment_id, KIND_TAG, EXPERIMENT_KIND[KIND_TAG])
    return found.experiment_id
