"""The user's shared local API: one uvicorn server per Prefect home that every flow command uses,
started by the first, kept up while any command uses it and for `TUNEGATE_LOCAL_API_IDLE_S`
seconds after the last (600 by default), then gone by itself.

    api = attach(idle_s=600)   # the running one, healthy and of the same key; else a new one
    api.wait_ready()           # returns at once for a server already up
    api.stop()                 # only to give it up early (a configured server won)

A command that starts its own API pays ~4 s of wall time and ~5 CPU s of the server's start-up
(importing Prefect's server, migrating its database) before its flow can begin (issue 33); a
server already up costs it one health check. The server is detached (its own session, no
parent-death signal, its output in the place's log): it outlives the command by design and no
signal meant for the command's terminal reaches it. What stops it is tunegate.local_api.idle,
inside the server: no request for the idle time and no command holding the users lock. A server
killed outright leaves its record behind; the next command sees the pid gone and starts another,
as it does for a server silent past its start-up time that no other command uses (hung). Files
and locks: tunegate.local_api.state.
"""
from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tunegate.local_api.child import (TIMEOUT, healthy, output_tail, reserved_port, server_command, server_env,
                                      wait_until_healthy)
from tunegate.local_api.db_template import Prepared, prepare
from tunegate.local_api.state import (SERVER_IDLE, SERVER_KEY, SERVER_PLACE, Place, Record, age_s, has_ended,
                                      is_server, server_key)

IDLE = "TUNEGATE_LOCAL_API_IDLE_S"
DEFAULT_IDLE_S = 600.0
logger = logging.getLogger(__name__)


class SharedApi:
    """This command's use of the shared local API: the users lock it holds, the server's record,
    and the child when this command started it."""

    def __init__(self, place: Place, record: Record, users_fd: int, proc: subprocess.Popen | None = None,
                 reserved: socket.socket | None = None, log_from: int = 0, prepared: Prepared | None = None) -> None:
        self.place, self.record, self._users_fd, self.proc = place, record, users_fd, proc
        self._log_from = log_from  # where the log's output of a server this command started begins
        self._prepared = prepared  # the home's database as a server this command started found it
        self._reserved = reserved  # the port, held until a server this command started answers

    @property
    def url(self) -> str:
        return self.record.url

    @property
    def pid(self) -> int:
        return self.record.pid

    @property
    def running(self) -> bool:
        return self._users_fd is not None

    def wait_ready(self) -> None:
        """Block until the server answers its health check (ServiceUnavailable when it cannot start)."""
        log = self.place.log_file
        wait_until_healthy(self.url, self._exit_code, lambda: _log_tail(log, self._log_from), log)
        if self._prepared is not None:  # a first start's database: the template; the catalogue noted
            self._prepared.started()
            self._prepared = None
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None

    def stop(self) -> None:
        """Give the server up: stop it now when this command started it and no other uses it;
        else leave it to its idle time."""
        fd, self._users_fd = self._users_fd, None
        if fd is None:
            return
        try:
            if self.proc is not None and _alone(fd):
                stop_server(self.place, self.record)
        finally:
            os.close(fd)
            if self._reserved is not None:
                self._reserved.close()

    def _exit_code(self) -> int | None:
        if self.proc is not None:
            return self.proc.poll()
        return None if is_server(self.record.pid) else 1


def idle_seconds() -> float:
    """TUNEGATE_LOCAL_API_IDLE_S: how long the shared API outlives its last command; 0 means no
    shared API (each command's own, gone with it). A value that is not a number >= 0 is refused."""
    raw = os.environ.get(IDLE, "").strip()
    if not raw:
        return DEFAULT_IDLE_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        from tunegate.errors import UsageError

        raise UsageError(f"{IDLE}={raw!r} is not a number of seconds >= 0; set it to e.g. 600, "
                         "or 0 for a local API that lives only as long as each command")
    return seconds


def attach(idle_s: float) -> SharedApi:
    """Use the place's running server when it is ours (alive, same key) and answering or still
    starting; else start one (replacing a dead, hung or foreign record; a server of another key
    that no command uses is stopped). Two commands racing here start one server: the place's lock
    is held from reading the record to writing it."""
    place = Place.of_environment()
    key = server_key()
    with place.choosing():
        users_fd = place.use(key)
        record = place.read()
        if record is not None and record.key != key and is_server(record.pid):
            # Another code's or settings' server: once the record names ours nobody finds it, and
            # left alone it would idle on for idle_s at ~0.8 CPU s a minute (every other command of
            # two checkouts used in turn started one more).
            _stop_if_unused(place, record)
        elif record is not None and is_server(record.pid):
            starting = age_s(record) < float(os.environ.get(TIMEOUT) or 120)
            # A server busy with other commands may answer slowly: only one nobody else uses and
            # that stays silent is taken for hung.
            if starting or healthy(record.url, timeout=10) or not _only_user(users_fd):
                return SharedApi(place, record, users_fd)
            stop_server(place, record)  # alive, unused, not answering past its start-up: hung
        return _start(place, key, idle_s, users_fd)


def stop_server(place: Place, record: Record, grace_s: float = 10) -> bool:
    """Terminate the recorded server (SIGTERM, `grace_s`, SIGKILL) and forget it. False when the
    pid no longer runs tunegate's local API."""
    place.forget(record.pid)
    if not is_server(record.pid):
        return False
    logger.info(f"Stopping the shared local API on {record.url} (pid {record.pid})")
    os.kill(record.pid, signal.SIGTERM)
    os.kill(record.pid, signal.SIGCONT)  # a stopped process (SIGSTOP, a debugger's) ends too
    deadline = time.monotonic() + grace_s
    while is_server(record.pid):
        if time.monotonic() > deadline:
            os.kill(record.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    # "stopped" means ended, its port free: a process on its way out is no longer a server by its
    # command line but still runs a moment (longer on a loaded machine). Only waited for, never
    # signalled again: the pid may be another program's by now.
    deadline = time.monotonic() + 5
    while not has_ended(record.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True


def running(place: Place) -> Record | None:
    """The place's server, when its record names one that runs."""
    record = place.read()
    return record if record is not None and is_server(record.pid) else None


def stop_unused(place: Place) -> tuple[Record | None, bool]:
    """Stop the place's server unless a command uses it: (its record or None when none runs,
    whether it was stopped). Commands that come meanwhile wait, then start another."""
    record = running(place)
    if record is None:
        return None, False
    return record, _stop_if_unused(place, record)


def _stop_if_unused(place: Place, record: Record) -> bool:
    """Stop the recorded server unless a command holds its users lock; whether it was stopped."""
    fd = place.open_users(record.key)
    try:
        return _alone(fd) and stop_server(place, record)
    finally:
        os.close(fd)


def _start(place: Place, key: str, idle_s: float, users_fd: int) -> SharedApi:
    reserved = reserved_port()
    port = reserved.getsockname()[1]
    logger.info(f"Starting the shared local API on http://127.0.0.1:{port} (Prefect's API for every tunegate "
                f"command on this Prefect home; it stops {idle_s:g} s after the last)")
    env = server_env(**{SERVER_IDLE: repr(idle_s), SERVER_PLACE: str(place.folder), SERVER_KEY: key})
    prepared = prepare(env, place.folder)  # a fresh home starts from the template: no migrations, no block registration
    # Only the server's errors land there (uvicorn at level error); the last server's are kept
    # until the file passes 1 MB.
    with open(place.log_file, "ab" if _size(place.log_file) < 2**20 else "wb") as log:
        log_from = log.tell()
        # Its own session: Ctrl-C or a hang-up of the command's terminal does not reach it.
        proc = subprocess.Popen(server_command(port), env=env, cwd=place.folder, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
    record = Record(proc.pid, port, key, time.time())
    place.write(record)
    return SharedApi(place, record, users_fd, proc, reserved, log_from, prepared)


def _only_user(users_fd: int) -> bool:
    """Whether this command is the server's only user; it stays one either way (a lock that
    failed to turn exclusive is no longer held: flock converts by dropping first)."""
    alone = _alone(users_fd)
    fcntl.flock(users_fd, fcntl.LOCK_SH)
    return alone


def _alone(users_fd: int) -> bool:
    """Whether this command is the server's only user (its shared lock turns exclusive at once)."""
    try:
        fcntl.flock(users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _log_tail(path: Path, start: int) -> str:
    """The place's log from `start`: a server's output (uvicorn's errors, a failed start's traceback)."""
    try:
        with open(path, "rb") as f:
            return output_tail(f, start)
    except OSError:
        return ""


def _size(path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
