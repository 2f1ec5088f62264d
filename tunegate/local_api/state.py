"""Where the user's shared local API is written down (tunegate.local_api.shared): one folder per
Prefect home, `$PREFECT_HOME/tunegate/` (`~/.prefect/tunegate/` by default), holding

    local-api.json    the server now in use: pid, port, key, started (a record, written atomically)
    local-api.lock    held exclusively while a command finds or starts the server: two racing
                      commands start one
    local-api-KEY.users  held shared by every command that uses the server of that key, for the
                      command's whole life (the kernel drops it when the process ends, however it
                      ends); the server exits only once it can hold it exclusively
                      (tunegate.local_api.idle)
    local-api.log     the server's own output (uvicorn at level error)

The key names what the server was started with: tunegate's and Prefect's versions, the Python
and tunegate source it runs, and every PREFECT_ setting of the environment (its database, its
logging); a command with another key starts a server of its own and writes it down instead.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tunegate.local_api.setting_paths import absolute_settings, prefect_home

API_URL = "PREFECT_API_URL"
APP = b"tunegate.local_api.app:create_app"  # in the server's command line: tells it from a reused pid
# What a shared server reads (tunegate.local_api.idle): its idle time, its place's folder, its key.
SERVER_IDLE = "TUNEGATE__LOCAL_API_IDLE_S"
SERVER_PLACE = "TUNEGATE__LOCAL_API_PLACE"
SERVER_KEY = "TUNEGATE__LOCAL_API_KEY"
SETTLE_S = 2.0  # how long an empty command line is read again (`is_server`): a process mid-exec, or exiting


@dataclass(frozen=True)
class Record:
    """The shared local API a command started, as local-api.json holds it."""

    pid: int
    port: int
    key: str
    started: float  # time.time() when it was started

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"


@dataclass(frozen=True)
class Place:
    """The files of one Prefect home's shared local API."""

    folder: Path

    @classmethod
    def of_environment(cls) -> Place:
        """The place of the Prefect home this process's environment names (Prefect's default home
        when none: ~/.prefect)."""
        return cls(prefect_home(os.environ) / "tunegate")  # a relative home: in this command's folder

    @property
    def record_file(self) -> Path:
        return self.folder / "local-api.json"

    def users_file(self, key: str) -> Path:
        """The users lock of the servers started with `key` (a server replaced by one of another key
        is stopped then if no command uses it, else once idle after its own commands end, whoever
        uses the new one)."""
        return self.folder / f"local-api-{key}.users"

    @property
    def log_file(self) -> Path:
        return self.folder / "local-api.log"

    @contextlib.contextmanager
    def choosing(self) -> Iterator[None]:
        """Hold the place's lock: one command at a time finds or starts its server."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "local-api.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield  # closing the file drops the lock

    def use(self, key: str) -> int:
        """Mark this process as a user of the server of `key` (a shared lock on its users file,
        held until the descriptor returned is closed or the process ends); waits while a server
        that found itself unused is stopping."""
        fd = self.open_users(key)
        fcntl.flock(fd, fcntl.LOCK_SH)
        return fd

    def open_users(self, key: str) -> int:
        """A descriptor of the users file of `key` (never removed: a command holding the lock of a
        removed file would not be seen by the next server)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return os.open(self.users_file(key), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def read(self) -> Record | None:
        """The record, or None when there is none or it cannot be read (a torn or foreign file)."""
        try:
            fields = json.loads(self.record_file.read_text(encoding="utf-8"))
            return Record(int(fields["pid"]), int(fields["port"]), str(fields["key"]), float(fields["started"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, record: Record) -> None:
        """Replace the record atomically: a reader sees the old one or the new one."""
        part = self.record_file.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps(asdict(record)), encoding="utf-8")
        os.replace(part, self.record_file)

    def forget(self, pid: int) -> None:
        """Remove the record if it still names `pid`."""
        record = self.read()
        if record is not None and record.pid == pid:
            with contextlib.suppress(FileNotFoundError):
                self.record_file.unlink()


def server_key() -> str:
    """What a reused server must have been started with, as a short digest."""
    try:
        prefect = version("prefect")
    except PackageNotFoundError:
        prefect = ""
    env = {**os.environ, **absolute_settings(os.environ)}  # what the server is given
    settings = sorted((k, v) for k, v in env.items() if k.startswith("PREFECT_") and k != API_URL)
    # The package's own version, read where it already is (importing the package's front door from
    # here would run back up the layers), and the server's own code as it is on disk now: an
    # edited checkout does not reuse a server running the old code.
    tunegate = getattr(sys.modules.get("tunegate"), "__version__", "")
    code = [(p.name, p.stat().st_mtime_ns) for p in sorted(Path(__file__).parent.glob("*.py"))]
    text = json.dumps([tunegate, prefect, sys.executable, __file__, code, settings])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_server(pid: int) -> bool:
    """Whether `pid` is alive and (where /proc tells) runs tunegate's local API app.

    A process's command line reads empty for a moment while it execs, even after the
    `subprocess.Popen` that started it has returned (the close-on-exec pipe Popen waits on closes
    before the new program's arguments are in place: 85 of 300 starts read empty at once here), and
    again while it exits. Read once, a command racing the one that had just started the server took
    it for dead and started a second (CI, sessions 45 and 47). So an empty one is read again until
    it is not, or the process has ended, for SETTLE_S at most."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process under a reused pid
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not Path("/proc/self").exists():
        return True
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            found = cmdline.read_bytes()
        except OSError:
            return False
        if found or has_ended(pid) or time.monotonic() > deadline:
            return APP in found
        time.sleep(0.002)


def has_ended(pid: int) -> bool:
    """Whether `pid` has exited: gone, or a zombie its parent has not yet reaped. A process on its
    way out already shows an empty command line while it still runs (`is_server` waits for this)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return True
    except OSError:  # no /proc here: alive is all this can tell
        return False
    return stat[stat.rfind(b")") + 2:][:1] in (b"Z", b"X")


def age_s(record: Record) -> float:
    return time.time() - record.started
