"""Where a sweep's candidates report their validation losses: one SQLite file the sweep owns.

    board = PruneBoard(Path(".tunegate/prune/sweep.sqlite"), sweep="<parent run id>")
    board.begin("3f2a9c01b7de")                  # a retried candidate starts over
    board.report("3f2a9c01b7de", step=5, loss=2.31)
    board.at_step(5, exclude="3f2a9c01b7de", completed_only=True)   # [2.20, 2.42]
    board.end("3f2a9c01b7de", "completed", step=20)

Why a file: candidates train in processes of their own (a fork-server child, a Dask worker's, a Ray
task's, a deployment run's), in parallel. SQLite serialises their writes across processes with its
own locks (each call one short transaction, a 60 s busy timeout) and needs no server; the file sits
beside the spec in `.tunegate/`, where the candidate specs already are, so every worker that reads
those reads this too (a shared path; SQLite on NFS is only as safe as the NFS's locks). Rows are kept
per sweep (the MLflow parent run), so a rerun of the sweep judges against the candidates it reuses.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

BUSY_TIMEOUT_S = 60  # a write waits this long for another candidate's: each holds the lock for ~1 ms
_SCHEMA = """
CREATE TABLE IF NOT EXISTS losses (sweep TEXT NOT NULL, candidate TEXT NOT NULL, step INTEGER NOT NULL,
                                   loss REAL NOT NULL, PRIMARY KEY (sweep, candidate, step));
CREATE TABLE IF NOT EXISTS ends (sweep TEXT NOT NULL, candidate TEXT NOT NULL, state TEXT NOT NULL,
                                 step INTEGER NOT NULL, PRIMARY KEY (sweep, candidate));
"""
States = ("completed", "pruned")


class PruneBoard:
    """One sweep's losses per candidate and step, and how each candidate's training ended."""

    def __init__(self, path: str | Path, sweep: str):
        self.path, self.sweep = Path(path), sweep

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.executescript(_SCHEMA)
        return db

    def _write(self, *statements: tuple[str, tuple]) -> None:
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")  # the write lock first: no reader-turned-writer deadlock
            for sql, args in statements:
                db.execute(sql, args)
            db.execute("COMMIT")
        finally:
            db.close()

    def _read(self, sql: str, args: tuple) -> list[tuple]:
        db = self._connect()
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def begin(self, candidate: str) -> None:
        """Forget what an earlier attempt of this candidate reported: it trains again from step 0."""
        self._write(("DELETE FROM losses WHERE sweep = ? AND candidate = ?", (self.sweep, candidate)),
                    ("DELETE FROM ends WHERE sweep = ? AND candidate = ?", (self.sweep, candidate)))

    def report(self, candidate: str, step: int, loss: float) -> None:
        self._write(("INSERT OR REPLACE INTO losses VALUES (?, ?, ?, ?)", (self.sweep, candidate, step, loss)),)

    def end(self, candidate: str, state: str, step: int) -> None:
        """Record how the candidate's training ended: `completed` (its whole budget) or `pruned`."""
        if state not in States:
            raise ValueError(f"state must be one of {States}, not {state!r}")
        self._write(("INSERT OR REPLACE INTO ends VALUES (?, ?, ?, ?)", (self.sweep, candidate, state, step)),)

    def own(self, candidate: str) -> dict[int, float]:
        """The candidate's losses so far, by step."""
        rows = self._read("SELECT step, loss FROM losses WHERE sweep = ? AND candidate = ?", (self.sweep, candidate))
        return dict(rows)

    def at_step(self, step: int, exclude: str, completed_only: bool) -> list[float]:
        """The losses other candidates reported at `step`: every one's, or only the completed ones'."""
        sql = "SELECT l.loss FROM losses l"
        if completed_only:
            sql += " JOIN ends e ON e.sweep = l.sweep AND e.candidate = l.candidate AND e.state = 'completed'"
        sql += " WHERE l.sweep = ? AND l.step = ? AND l.candidate != ?"
        return [loss for (loss,) in self._read(sql, (self.sweep, step, exclude))]
