"""Where library chatter goes: a log file by default, stderr too with `--verbose`.

    tunegate preflight examples/quickstart.yaml             # the report; Prefect/MLflow lines in the log
    tunegate preflight examples/quickstart.yaml --verbose   # and every library line on stderr as well

A user's terminal shows tunegate's own output: the report (stdout), the progress of long steps
and one-line errors (stderr). Prefect's start-up banner, its flow and task state lines, MLflow's
"Creating initial MLflow database tables", Alembic's migrations and libraries' FutureWarnings are
logging records (warnings are captured into logging), so routing the root logger decides where
they land. This must run before prefect or mlflow is imported: Prefect leaves a root logger that
already has a handler alone, and MLflow adds its own stderr handler unless told not to.

The log file is `$TUNEGATE_LOG_FILE`, else `$XDG_CACHE_HOME/tunegate/logs/tunegate.log` (by
default under ~/.cache), opened only when something is written and rotated at 5 MB. The values
of credential-looking environment variables are masked in it.
"""
from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

LOG_FILE_ENV = "TUNEGATE_LOG_FILE"
LOG_LEVEL_ENV = "TUNEGATE_LOG_LEVEL"  # INFO unless set (the secrets test turns everything to DEBUG)
MAX_BYTES, BACKUPS = 5 << 20, 2  # enough for dozens of runs; old chatter is not worth more disk
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
QUIET_LOGGERS = ("httpx", "httpcore")
KINETO_LEVEL_ENV = "KINETO_LOG_LEVEL"
_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"
_installed: list[logging.Handler] = []


def log_file() -> Path:
    """Where library chatter is written."""
    explicit = os.environ.get(LOG_FILE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tunegate" / "logs" / "tunegate.log"


class _MaskSecrets(logging.Filter):
    """Masks the values of environment variables whose names say they hold a credential."""

    def __init__(self) -> None:
        super().__init__()
        # The values as they are now; the Redactor only at the first record, since importing it
        # loads the whole tracking package (~50 ms) that a check which logs nothing never needs.
        self.values = [v for k, v in os.environ.items() if _SECRET_NAME.search(k)]
        self.redactor = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.values:
            if self.redactor is None:
                from tunegate.tracking.redaction import Redactor

                self.redactor = Redactor(self.values)
            if self.redactor.secrets:
                record.msg, record.args = self.redactor.text(record.getMessage()), None
        return True


def route_library_output(verbose: bool) -> Path:
    """Send every logging record (and captured warning) to the log file, and to stderr if `verbose`."""
    # Without this MLflow gives its loggers a stderr handler of their own when first imported.
    os.environ.setdefault("MLFLOW_CONFIGURE_LOGGING", "false")
    if "mlflow" in sys.modules:  # imported before us (a library caller, a test): undo what it set up
        _hand_back("mlflow")
    if not verbose:
        # torch's profiler (Kineto, which the mini-run's profiled steps use) writes "USDT: ...
        # profiler_start/stop" lines from C++ straight to stderr, past logging; only its own
        # level hides them: 6 is above every level it has (5 still shows them).
        os.environ.setdefault(KINETO_LEVEL_ENV, "6")
    path = log_file()
    root = logging.getLogger()
    for handler in _installed:  # a second call (tests call main() repeatedly) replaces the first
        root.removeHandler(handler)
        handler.close()
    _installed.clear()
    mask = _MaskSecrets()
    handlers: list[logging.Handler] = [_file_handler(path)]
    if verbose:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler.addFilter(mask)
        root.addHandler(handler)
        _installed.append(handler)
    root.setLevel(os.environ.get(LOG_LEVEL_ENV, "INFO").upper())
    for name in QUIET_LOGGERS:  # a line per HTTP request to Prefect's API would bury everything else
        logging.getLogger(name).setLevel(logging.WARNING if root.level > logging.DEBUG else logging.NOTSET)
    # Re-arm: a first call's capture may have been displaced since (warnings.catch_warnings swaps
    # showwarning), and captureWarnings(True) alone does nothing while it believes it is on.
    logging.captureWarnings(False)
    logging.captureWarnings(True)
    return path


def _hand_back(name: str) -> None:
    """Give a library's logger back to the root: drop the handlers it installed, let records propagate."""
    logger = logging.getLogger(name)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.propagate = True


def _file_handler(path: Path) -> logging.Handler:
    return LazyLogFile(path)


class LazyLogFile(logging.Handler):
    """The rotating log file, made at the first record it is handed.

    Public name on purpose: Prefect's `setup_logging` takes a root handler whose class name starts
    with "_" for none of the user's and configures the root itself, which put Prefect's console
    lines on the terminal of every flow command (tests/cli/test_sweep_experience.py).

    logging.handlers imports socket, pickle and queue (~5-8 ms of a 0.2 s rejection, which logs
    nothing; issue 15), so it loads only when a record is written.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.file: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.file is None:
            self.file = _rotating(self.path)
            self.file.setFormatter(self.formatter)
        self.file.emit(record)

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        super().close()


def _rotating(path: Path) -> logging.Handler:
    import logging.handlers

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                    delay=True, encoding="utf-8")
    except OSError:  # a read-only home must not stop the gate: the chatter is then dropped
        return logging.NullHandler()
