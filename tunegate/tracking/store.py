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

Why aside: MLflow's ~440 migration statements are not one transaction on SQLite (Alembic runs DDL
outside transactions there), so a kill in the middle used to leave a half-migrated `mlflow.db`
that every later run failed on (45 of 63 kill points). A fresh store is now built as
`.mlflow.db.creating-<pid>` beside it and renamed into place only when complete: a kill at any
point leaves no store (and a leftover the next creation removes) or a complete one. A store that an
older tunegate left half-migrated, holding no runs, is set aside (`mlflow.db.broken-<time>`) and
rebuilt; one that holds runs is never touched beyond the backup-then-upgrade MLflow asks for.

Why quoted: SQLAlchemy reads a `sqlite:///` URI as a URL (`%41` is `A`, a query starts at `?`);
the URIs are built and read in tunegate.tracking.sqlite_uris, for any byte a folder name holds.
A tracking URI is checked before use (`check_tracking_uri`): a folder, a `file:` store (MLflow 3
refuses to write one), an unknown scheme or a control character is a usage error naming
tracking.mlflow_uri, not MLflow's exception.

MLflow is imported inside the functions: the static stages must not pay for it.
"""
from __future__ import annotations

import ipaddress
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from tunegate.errors import ServiceUnavailable, UsageError
from tunegate.processes.mlflow_import import import_mlflow
from tunegate.tracking.sqlite_uris import SQLITE as _SQLITE
from tunegate.tracking.sqlite_uris import sqlite_path, sqlite_uri

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from tunegate.spec.model import Spec

# Set to 1 to allow a plain-http tracking server that is not on this machine (research §5).
ALLOW_INSECURE_ENV = "TUNEGATE_ALLOW_INSECURE_TRACKING"
DEFAULT_DB = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
# MLflow 3 types an experiment by this tag: GenAI (traces, evaluations) or model training (runs,
# charts). MLflow's APIs and the UIs before 3.17 read it. The 3.17 UI does not: with its "GenAI /
# Model training" switch on (always, in 3.17: server/js's `shouldEnableWorkflowBasedNavigation`), an
# experiment's kind is the switch's, i.e. the `workflowType` URL parameter, else the browser's
# last choice (localStorage `mlflow.workflowType_v1`), else GenAI. So a fresh browser reaching the
# experiment from MLflow's home page opens it as GenAI, whatever the tag says. tunegate's links set
# the parameter, and the experiment's description (which the UI shows in both layouts, and in the
# experiments list) carries the link that opens its runs as model training.
KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = {KIND_TAG: "custom_model_development"}
NOTE_TAG = "mlflow.note.content"
TRAINING_PAGE = "#/experiments/{id}/runs?workflowType=machine_learning&compareRunsMode=CHART"
# A fresh store's migrations take ~2 s here; a minute covers a slow disk with room to spare.
LOCK_TIMEOUT_S = 120
# The stores MLflow 3 tracks runs in (a `+driver` suffix allowed on the databases): a SQLite file, a
# tracking server, a database server, Databricks. A `file:` folder store it no longer writes.
STORE_SCHEMES = ("sqlite", "http", "https", "postgresql", "mysql", "mssql", "databricks", "databricks-uc")


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
    check_tracking_uri(uri, allow_insecure)
    if uri.startswith(_SQLITE) and not uri.startswith(_SQLITE + "/"):
        relative, sep, query = uri[len(_SQLITE):].partition("?")
        return sqlite_uri(base / unquote(relative)) + sep + query
    return uri


def check_tracking_uri(uri: str, allow_insecure: bool = False) -> None:
    """Refuse a URI that names no MLflow store (see STORE_SCHEMES), and `http://` to a host other
    than this machine: params and reports would cross the network unencrypted to a server whose
    auth we cannot see. https and loopback are fine.
    """
    problem = _not_a_store(uri)
    if problem:
        from tunegate.pathguard import shown

        raise UsageError(f"the tracking URI '{shown(uri)}' {problem}. Use sqlite:///PATH/mlflow.db (a file), "
                         "http(s)://HOST:PORT (an MLflow server) or postgresql://... (its database); "
                         "fix tracking.mlflow_uri or --tracking-uri")
    parts = urlsplit(uri)
    if parts.scheme != "http" or _is_loopback(parts.hostname or ""):
        return
    if allow_insecure or os.environ.get(ALLOW_INSECURE_ENV) == "1":
        return
    raise UsageError(
        f"refusing tracking URI {parts.scheme}://{parts.hostname}: plain http to another machine "
        "sends run data unencrypted and unauthenticated. Use https behind an authenticating proxy, "
        f"or set {ALLOW_INSECURE_ENV}=1 if this network is trusted.")


def _not_a_store(uri: str) -> str | None:
    """Why `uri` names no tracking store MLflow 3 opens, or None."""
    if "\0" in uri or (not uri.startswith(_SQLITE) and any(ord(c) < 0x20 or c == "\x7f" for c in uri)):
        return "holds a control character (a NUL, a newline, an escape)"  # a file name may hold all but NUL
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        return f"cannot be read as a URI ({exc})"
    scheme = (parts.scheme or (uri if uri in ("databricks", "databricks-uc") else "")).lower().split("+", 1)[0]
    if not scheme or len(scheme) == 1:  # a path (`/srv/mlruns`, `C:\\mlruns`): MLflow's file store
        return ("is a path: MLflow 3 no longer writes a folder (file) store; for a file beside the spec "
                "write sqlite:///mlflow.db")
    if scheme == "file":
        return "is a file: store, which MLflow 3 no longer writes"
    if scheme not in STORE_SCHEMES:
        return f"has the scheme {scheme!r}, which names no MLflow tracking store"
    if scheme == "sqlite" and not uri.startswith(_SQLITE):
        return "is not sqlite:/// followed by the database file's path"
    if scheme in ("http", "https", "postgresql", "mysql", "mssql") and not parts.hostname:
        return "names no host"
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ensure_store(uri: str) -> None:
    """Create or upgrade the tracking store once, under a file lock; safe to call from many processes.

    An out-of-date SQLite schema is backed up beside the file (`mlflow.db.bak-<revision>`) before
    it is upgraded, as MLflow asks. Non-SQLite stores are only opened (a server owns its schema).
    """
    import_mlflow()
    path = sqlite_path(uri)
    if path is None:
        _open_server_store(uri)
        return
    from filelock import FileLock

    _writable_store(path)
    with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
        _init_sqlite(uri, path)


def check_store(uri: str) -> None:
    """Before a flow starts: the store `uri` names can be used. A SQLite file that is a folder, a device
    or a kernel file is a UsageError; a server that does not answer is ServiceUnavailable."""
    path = sqlite_path(uri)
    if path is None:
        from tunegate.tracking.reachable import check_reachable

        check_reachable(uri)
        return
    from tunegate.pathguard import refusal, shown

    if os.path.lexists(path) and refusal(path):
        raise UsageError(f"the MLflow store cannot be {shown(path)}: {refusal(path)}; fix tracking.mlflow_uri")


def _writable_store(path: Path) -> None:
    """A SQLite store can be created or opened at `path`: not a folder, a device or a kernel file, in a
    folder that exists or can be made (UsageError naming it otherwise)."""
    from tunegate.pathguard import shown

    check_store(sqlite_uri(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the folder of the MLflow store {shown(path)}: {exc.strerror or exc}; "
                         "fix tracking.mlflow_uri") from None


def _open_server_store(uri: str) -> None:
    """A server (or database) store: it must answer now, and as an MLflow store (ServiceUnavailable if not)."""
    from mlflow.exceptions import MlflowException

    from tunegate.tracking.reachable import check_reachable
    from tunegate.tracking.redaction import Redactor, uri_password, uri_without_password

    check_reachable(uri)
    try:
        open_client(uri).search_experiments(max_results=1)
    except ModuleNotFoundError as exc:  # a postgresql:// store without its driver (SQLAlchemy imports it)
        if not (exc.name or "").startswith("psycopg"):
            raise
        from tunegate.errors import MissingDependency

        raise MissingDependency(exc.name, "postgres") from None
    except MlflowException as exc:
        why = Redactor([uri_password(uri) or ""]).text(str(exc.message).splitlines()[0][:300])
        raise ServiceUnavailable(f"the tracking store {uri_without_password(uri)} answered, but not as an MLflow "
                         f"store: {why}; check tracking.mlflow_uri") from None


def _init_sqlite(uri: str, path: Path) -> None:
    for leftover in path.parent.glob(f".{path.name}.creating-*"):  # a creation killed midway
        leftover.unlink(missing_ok=True)
    state = _schema_state(path)
    if state == "outdated, no runs":
        try:  # an older MLflow's store upgrades; one an older tunegate left half-migrated does not
            _upgrade_if_old(uri, path)
        except UsageError:
            path.replace(path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}"))
            state = "absent"  # rebuilt below: it held no run, so nothing is lost
    if state == "absent":
        _create_aside(path)
    elif state == "outdated":
        _upgrade_if_old(uri, path)
    # The first open verifies the schema and adds MLflow's default experiment (one transaction).
    open_client(uri).search_experiments(max_results=1)
    _reroot_artifacts(path)


def _reroot_artifacts(path: Path) -> None:
    """A store copied or moved with its project writes its artifacts in its new folder (artifact_root)."""
    import logging

    from tunegate.tracking.artifact_root import reroot

    for line in reroot(path):
        logging.getLogger(__name__).warning("the MLflow store %s was copied or moved: artifacts of %s", path, line)


def _schema_state(path: Path) -> str:
    """'absent' (no file, or 0 bytes), 'complete', or not at the latest revision: 'outdated' (it
    holds runs) or 'outdated, no runs'."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    if not path.is_file() or path.stat().st_size == 0:
        return "absent"
    try:
        # Read-write, so SQLite rolls back the hot journal a killed writer left (read-only cannot).
        with sqlite3.connect(f"file:{quote(os.fsencode(path))}?mode=rw", uri=True, timeout=30) as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = db.execute("SELECT version_num FROM alembic_version").fetchone() \
                if "alembic_version" in tables else None
            runs = db.execute("SELECT count(*) FROM runs").fetchone()[0] if "runs" in tables else 0
    except sqlite3.DatabaseError as exc:  # not SQLite at all: never overwrite what we cannot read
        raise UsageError(f"{path} is not an MLflow store ({exc}); move it away or set tracking.mlflow_uri") from None
    if version is not None and version[0] == _get_latest_schema_revision() and "experiments" in tables:
        return "complete"
    return "outdated" if runs else "outdated, no runs"


def _create_aside(path: Path) -> None:
    """Build a fresh schema in a file beside `path`, then rename it into place (atomic on POSIX).
    The schema is a copy of a migrated empty store kept per MLflow version (tracking.store_template)."""
    from tunegate.tracking.store_template import build_schema

    tmp = path.with_name(f".{path.name}.creating-{os.getpid()}")
    build_schema(tmp)
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())  # the rename must not reach the disk before the tables do
    os.replace(tmp, path)
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform opens folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _upgrade_if_old(uri: str, path: Path) -> None:
    """Back up, then upgrade, a store an older MLflow created (MLflow itself refuses to open it)."""
    import sqlalchemy
    from mlflow.store.db.utils import _get_latest_schema_revision, _get_schema_version, _upgrade_db

    engine = sqlalchemy.create_engine(uri)
    try:
        current = _get_schema_version(engine)
        if current == _get_latest_schema_revision():
            return
        backup = path.with_name(f"{path.name}.bak-{current}")
        _sqlite_backup(path, backup)
        try:
            _upgrade_db(engine)
        except Exception as exc:  # a half-migrated store: say so, touch nothing more
            raise UsageError(f"the MLflow store {path} has a schema that cannot be upgraded "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); a copy from before "
                             f"the attempt is {backup}. Move the store away or set tracking.mlflow_uri.") from None
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
    import_mlflow()
    from mlflow import MlflowClient

    # With a server, MLflow prints "View run ... at: <url>" on stdout as each run ends, into
    # `--json` output and the terminal table; `tunegate runs` prints the links instead.
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    return MlflowClient(tracking_uri=uri)


def ensure_experiment(client: MlflowClient, name: str, uri: str) -> str:
    """The id of experiment `name`, created if missing, with its artifacts pinned beside a SQLite store.

    Without a pinned location MLflow puts artifacts in `./mlruns` under whatever folder the process
    happened to start in, so one sweep's artifacts would scatter across working directories.
    """
    from mlflow.exceptions import MlflowException

    from tunegate.tracking.artifact_root import ROOT_TAG, ROOT_TAG_VALUE

    found = client.get_experiment_by_name(name)
    if found is None:
        path = sqlite_path(uri)
        location = (path.parent / ARTIFACTS_DIR).resolve().as_uri() if path else None
        # Tagged as tunegate's layout: a copy of the project re-roots it (tracking.artifact_root).
        tags = {**EXPERIMENT_KIND, **({ROOT_TAG: ROOT_TAG_VALUE} if location else {})}
        try:
            found = client.get_experiment(client.create_experiment(name, artifact_location=location, tags=tags))
        except MlflowException as exc:  # another process created it between our two calls
            found = client.get_experiment_by_name(name)
            if found is None:
                raise exc
    if found.lifecycle_stage == "deleted":
        raise UsageError(f"MLflow experiment '{name}' is deleted; restore it "
                         f"(`mlflow experiments restore --experiment-id {found.experiment_id}`) "
                         "or set tracking.experiment to another name")
    wanted = {**EXPERIMENT_KIND, NOTE_TAG: layout_note(found.experiment_id)}
    for key, value in wanted.items():
        if key not in found.tags:  # made before tunegate set it; a kind or note the user chose is kept
            client.set_experiment_tag(found.experiment_id, key, value)
    return found.experiment_id


def layout_note(experiment_id: str) -> str:
    """The experiment's description: what it holds, and the link that opens its runs as model training."""
    page = TRAINING_PAGE.format(id=experiment_id)
    return ("Preflights, sweeps and full runs tracked by tunegate. They are model-training runs: "
            f"[open them in the Model training layout]({page}), or choose **Model training** in the "
            "GenAI / Model training switch at the top left (MLflow remembers it in this browser).")
