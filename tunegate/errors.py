"""Every exception tunegate raises on purpose, and the exit code each one means.

    TunegateError                 anything tunegate raises on purpose                      exit 1
    ├── UsageError                the command cannot run as asked: bad flags, an unreadable exit 2
    │   │                         spec, a missing environment variable, a missing extra
    │   ├── YamlSyntaxError       the spec is not YAML, or past the loader's bounds (TG106, TG131, TG132)
    │   ├── SpaceError            a sweep's search space cannot be used as given
    │   ├── LaunchConfigError     the launcher's environment is incomplete (NNODES > 1, no MASTER_ADDR)
    │   ├── OutputError           an output cannot be written: a full disk, a read-only folder, stdout gone bad
    │   ├── MissingDependency     an optional extra is not installed; the message has the install line
    │   └── ServiceUnavailable    a service the command is set to use does not answer as one (a tracking
    │       │                     server or its database, the Prefect API): the message names it and the fix
    │       └── EventNotSent      --emit-event: no Prefect API took the event (the verdict stands)
    ├── IncomparableRunsError     runs scored on different data were asked to be ranked together
    ├── DataError                 a data file cannot be read where a whole, exact read is required
    │   ├── UnreadableRecord      a line is not one JSON object (the fingerprint of half a file would lie)
    │   │   └── NumberOutOfRange  a number's exponent is past any range (1e-400000000000000000000)
    │   ├── DecompressionBomb     a gzip stream inflates past any real dataset's ratio: reading stops
    │   └── BrokenContainer       a .json array or parquet file breaks off; nothing after it can be trusted
    ├── ApprovalError             no approval for this spec, or it no longer matches the files
    ├── EstimateError             the estimate cannot be made; carries the finding code to report
    └── StageError                a stage could not run at all: not a verdict on the config   exit 3
        ├── AdvisorFailure        the LLM could not be used; carries the TG6xx code (the rules' advice stands)
        └── NomadError            NOMAD stopped without a result; carries what it evaluated

    Terminated (a KeyboardInterrupt)  SIGTERM, raised where the process was, so it unwinds as a
                                  Ctrl-C does: runs ended KILLED, servers stopped   exit 143
    TrainingStopped (a KeyboardInterrupt)  in a thread whose training or mini-run was stopped
                                  because the command was cut short: no verdict, no run logged

Problems found in the user's files are never exceptions: they are `Finding`s in the report. The
CLI is the single place that turns these into exit codes, reading `exit_code` from the class:
0 approved or done, 1 rejected (the source's SystemExit(1)), 2 usage or environment (a missing
extra, a service that does not answer, an output that cannot be written: what the user can fix),
3 could not run (an exception not listed here is a bug of ours and also exits 3, as "internal
error").
"""
from __future__ import annotations

import signal
from typing import Any, ClassVar

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class TunegateError(Exception):
    """Base of every error tunegate raises on purpose."""

    exit_code: ClassVar[int] = EXIT_REJECTED


class UsageError(TunegateError):
    """The command line, the spec file or the environment cannot be used at all (exit code 2)."""

    exit_code: ClassVar[int] = EXIT_USAGE


class YamlSyntaxError(UsageError):
    """The spec's text is not valid YAML; `line` and `column` say where (1-based, when known).

    `code` is the finding the spec stage reports, chosen by the YAML reader
    (`tunegate.spec.yaml_loader`): TG106 for text that is not YAML, TG131/TG132 for YAML past its
    bounds (too deep, too many values).
    """

    def __init__(self, message: str, line: int | None, column: int | None, code: str):
        super().__init__(message)
        self.line = line
        self.column = column
        self.code = code


class SpaceError(UsageError):
    """The search space cannot be used as given (a start point the spec cannot supply, ...)."""


class LaunchConfigError(UsageError):
    """The launcher's environment is incomplete: the command line it needs cannot be built."""


class OutputError(UsageError):
    """A file or stream the command writes cannot be written (a full disk, a read-only folder): the
    environment's problem, not a verdict and not a bug; the message names the output (exit code 2)."""


class IncomparableRunsError(TunegateError):
    """Runs scored on different validation (or training) data were asked to be ranked together."""


class MissingDependency(UsageError):
    """An optional dependency is missing; the message says how to install it."""

    def __init__(self, package: str, extra: str):
        super().__init__(f"{package} is not installed; install it with: pip install 'tunegate[{extra}]'")
        self.package = package
        self.extra = extra


class ServiceUnavailable(UsageError):
    """A service the command is set to use (an MLflow tracking server or its database, the Prefect
    API) does not answer, or not as that service: the environment, not the user's config and not a
    bug; the message names the service's URI and the fix (exit code 2)."""


class DataError(TunegateError):
    """A data file cannot be read where every record must be read exactly."""


class UnreadableRecord(DataError):
    """A line of the file is not one JSON object (strict reading only)."""


class NumberOutOfRange(UnreadableRecord):
    """A number whose exponent is past what any exact reading holds (over 18 digits); `text` is the number."""

    def __init__(self, text: str, where: str = ""):
        super().__init__(f"{where}the number {text[:40]} has an exponent past any range")
        self.text = text


class DecompressionBomb(DataError):
    """A gzip stream inflates far more than data does; `inflated` bytes were read before it stopped."""

    def __init__(self, message: str, inflated: int = 0):
        super().__init__(message)
        self.inflated = inflated


class BrokenContainer(DataError):
    """A `.json` array or a parquet file breaks at a place; `kind` says how (json, utf8, depth, size, parquet)."""

    def __init__(self, kind: str, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.kind, self.line, self.column = kind, line, column


class WorkerDied(RuntimeError):
    """A worker process reading a file's parts ended before it sent the result of an item it was
    given (the system killed it for memory, or a signal did): tunegate.dataset.forked_pool."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process, as the exception's `__cause__`."""

    def __str__(self) -> str:
        return str(self.args[0])


class ApprovalError(TunegateError):
    """There is no approval for this spec, or it no longer matches the files."""


class EstimateError(TunegateError):
    """The estimate cannot be made; `code` is the finding to report, `key` the spec key to fix.
    `not_here`: what is missing is missing on this machine only (the model's config.json offline),
    no fault of the config: the estimate is not run here rather than failed."""

    def __init__(self, code: str, message: str, hint: str, key: str | None = None, not_here: bool = False):
        super().__init__(message)
        self.code, self.hint, self.key, self.not_here = code, hint, key, not_here


class Terminated(KeyboardInterrupt):
    """The process got SIGTERM (`tunegate.cli.main` turns the signal into this exception).

    A KeyboardInterrupt, so Prefect, MLflow and our own code unwind exactly as they do for Ctrl-C,
    then the CLI ends its runs KILLED and exits 143 (128 + SIGTERM), as the default handler would.
    """


class TrainingStopped(KeyboardInterrupt):
    """The process this thread followed was stopped because the command was cut short (SIGTERM,
    Ctrl-C, an error of the main thread: `tunegate.processes.followed`).

    A KeyboardInterrupt, as the signal is: a sweep candidate's `except Exception` does not make it
    an `errored` outcome, so no verdict is drawn from a run cut short and no run is logged for it.
    """


def cut_short_by(exc: BaseException | None) -> type[KeyboardInterrupt] | None:
    """Terminated when `exc` is, or was raised from, a SIGTERM's exception (ours, or Prefect's
    TerminationSignal, which its flow engine raises instead while a flow runs); KeyboardInterrupt
    for a Ctrl-C's; None otherwise.

    A signal's handler raises wherever the main thread is, and Python wraps some of what it
    interrupts: an exception in a class's `__set_name__` becomes a RuntimeError (measured: a sweep's
    SIGTERM during Prefect's validation of a subflow's parameters, which builds a pydantic model,
    ended as "internal error", exit 3, its MLflow runs left RUNNING).
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Terminated) or (not isinstance(exc, Exception)
                                           and getattr(exc, "signal", None) == signal.SIGTERM):
            return Terminated
        if isinstance(exc, KeyboardInterrupt):
            return KeyboardInterrupt
        exc = exc.__cause__ or exc.__context__
    return None


class StageError(TunegateError):
    """A stage could not run: no verdict on the user's config can be drawn from it (exit code 3)."""

    exit_code: ClassVar[int] = EXIT_INTERNAL


class AdvisorFailure(StageError):
    """The LLM could not be used; `code` is the TG6xx finding that says why."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class NomadError(StageError):
    """NOMAD stopped without a result (its process crashed); `evaluations` holds what was done."""

    def __init__(self, message: str, evaluations: list[Any], stderr: str = ""):
        super().__init__(message)
        self.evaluations = evaluations
        self.stderr = stderr


class EventNotSent(ServiceUnavailable):
    """`--emit-event`: no Prefect API took the event; the check's verdict, already shown, stands (exit 2)."""
