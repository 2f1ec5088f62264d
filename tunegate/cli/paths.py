"""The path guard at the command line: data files a command will read, checked before it starts.

    require_files(spec, "data.train", "data.validation")   # UsageError naming the key and why

`tunegate check` and `tunegate lint` report an unreadable data file as a finding (TG240), since
checking the files is their job. The commands that only read the data on the way to something
else (estimate, advise) and the flow commands (preflight, sweep, launch, which would start
Prefect first) refuse it up front with the same guard (`tunegate.pathguard`), so a folder, a FIFO,
/dev/zero or a symlink loop is a usage error in a second, never a hang, a crash or a silent
estimate of zero tokens.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tunegate.errors import UsageError
from tunegate.pathguard import refusal


def require_files(spec: Any, *keys: str) -> None:
    """Raise UsageError for the first spec path among `keys` (dotted) that is not a readable file."""
    for key in keys:
        section, name = key.split(".")
        value = getattr(getattr(spec, section), name)
        for path in value if isinstance(value, list) else [value]:  # a split may be several files
            problem = refusal(path)
            if problem:
                raise UsageError(f"{key}: {problem}. Relative paths in a spec resolve against the spec's folder.")


def require_file(path: str | Path, what: str) -> None:
    """Raise UsageError when the file a flag names (`what`, e.g. '--report') cannot be read."""
    problem = refusal(path)
    if problem:
        raise UsageError(f"{what}: {problem}")
