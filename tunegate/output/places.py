"""Where a finding points, as CI tools want it: a path relative to the checkout, a line, a column."""
from __future__ import annotations

import os
from pathlib import Path

from tunegate.report import Finding


def relative_uri(path: str, root: Path | None = None) -> str:
    """`path` relative to `root` (the working directory: a CI job's checkout), with forward slashes.

    Code scanning matches annotations to files by their path from the repository root; a path
    outside the checkout becomes a file:// URI (it cannot be annotated, but it is still named).
    """
    root = (root or Path.cwd()).resolve()
    full = Path(path)
    full = full if full.is_absolute() else (Path.cwd() / full)
    try:
        return Path(os.path.normpath(full)).relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.normpath(full)).as_uri()


def file_of(finding: Finding, spec: str | None) -> str | None:
    """The file a finding is in: its own, else the spec for a spec-key finding, else none."""
    if finding.file:
        return finding.file
    if finding.key and spec:
        return spec
    return None


def one_line(finding: Finding) -> str:
    """`TG204 last message is from 'user'; ... (fix: Append the assistant's answer ...)`."""
    fix = f" (fix: {finding.hint})" if finding.hint else ""
    return f"{finding.code} {finding.message}{fix}"
