"""Kill a fresh MLflow store's creation at its n-th SQL statement, as `kill -9` would.

The creation runs in a forked child (MLflow is already imported, so each kill point costs only
the statements before it). The child counts every statement any SQLAlchemy engine sends and
SIGKILLs itself just before statement `kill_at`: no handler, no `finally`, no rollback in our
process; SQLite sees what a killed process leaves.
"""
from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path


def create_store(uri: str, kill_at: int | None, count_file: Path | None = None,
                 mlflow_alone: bool = False) -> int | None:
    """Run `ensure_store(uri)` in a child killed before statement `kill_at` (1-based).

    `mlflow_alone`: create it as tunegate used to, by MLflow's own first open (the baseline).

    Returns the number of statements the creation sent when it finished (it never reached
    `kill_at`), or None when it was killed.
    """
    import sqlalchemy.event
    from sqlalchemy.engine import Engine

    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            sent = 0

            def count(*_args):
                nonlocal sent
                sent += 1
                if kill_at is not None and sent >= kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)

            sqlalchemy.event.listen(Engine, "before_cursor_execute", count)
            from tunegate.tracking.store import ensure_store, open_client

            if mlflow_alone:
                open_client(uri).search_experiments(max_results=1)
            else:
                ensure_store(uri)
            if count_file is not None:
                count_file.write_text(str(sent))
            os._exit(0)
        except BaseException:
            os._exit(70)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return None
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"the creation failed: status {status}"
    return int(count_file.read_text()) if count_file is not None else 0


def store_state(path: Path) -> str:
    """'absent', 'complete' (latest schema, every table, experiment 0), or what is wrong with it.

    Read straight from the file with sqlite3, independently of the code under test.
    """
    from mlflow.store.db.base_sql_model import Base
    from mlflow.store.db.utils import _get_latest_schema_revision

    if not path.exists():
        return "absent"
    try:
        with sqlite3.connect(path, timeout=30) as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            missing = set(Base.metadata.tables) - tables
            if missing:
                return f"missing tables {sorted(missing)[:3]}"
            (version,), = db.execute("SELECT version_num FROM alembic_version")
            if version != _get_latest_schema_revision():
                return f"schema at {version}"
            return "complete"
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"
