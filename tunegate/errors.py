"""tunegate's exceptions.

    TunegateError             anything tunegate raises on purpose
    ├── UsageError            bad flags or an unreadable spec: exit code 2
    └── StageError            a stage could not run at all (a missing optional dependency, ...)
        └── MissingDependency an extra is not installed; the message carries the install hint

Problems found in the user's files are never exceptions: they are `Finding`s in the report.
The CLI is the single place that turns these into exit codes.
"""


class TunegateError(Exception):
    """Base of every error tunegate raises on purpose."""


class UsageError(TunegateError):
    """The command line or the spec file cannot be used at all (exit code 2)."""


class StageError(TunegateError):
    """A stage could not run."""


class MissingDependency(StageError):
    """An optional dependency is missing; the message says how to install it."""

    def __init__(self, package: str, extra: str):
        super().__init__(f"{package} is not installed; install it with: pip install 'tunegate[{extra}]'")
        self.package = package
        self.extra = extra
