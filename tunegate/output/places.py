"""Where a finding points, as CI tools want it: a path relative to the checkout, a line, a column.

    repo_path("/ci/repo/data/a b.jsonl", Path("/ci/repo"))     # 'data/a b.jsonl' (GitHub, JUnit)
    artifact_uri("/ci/repo/data/a b.jsonl", Path("/ci/repo"))  # 'data/a%20b.jsonl' (SARIF: a URI)
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from tunegate.output.safe import encodable
from tunegate.report import Finding, GateReport


def _inside(path: str, root: Path | None) -> str | None:
    """`path` relative to `root` (default: the working directory, a CI job's checkout), or None."""
    base = Path(os.path.abspath(root or Path.cwd()))
    full = Path(os.path.abspath(path))
    # The checkout may be reached through a symlink (/tmp -> /private/tmp): try the names as given,
    # then both resolved, before calling the file outside it.
    for b, f in ((base, full), (base.resolve(), full), (base.resolve(), Path(os.path.realpath(full)))):
        try:
            return f.relative_to(b).as_posix()
        except ValueError:
            continue
    return None


def repo_path(path: str, root: Path | None = None) -> str:
    """The path from the checkout's root with forward slashes; outside the checkout, the absolute path.

    GitHub matches annotations to files by their path from the repository root (the runner itself
    turns an absolute path under the workspace into that); an absolute path outside it names the
    file in the message but annotates no line.
    """
    inside = _inside(encodable(path), root)
    return inside if inside is not None else Path(os.path.abspath(encodable(path))).as_posix()


def artifact_uri(path: str, root: Path | None = None) -> tuple[str, bool]:
    """SARIF's `artifactLocation.uri` for `path`, and whether it is relative to the checkout.

    A URI, not a path: a space, `%`, `#`, `?`, a non-ASCII letter are percent-encoded (UTF-8), and
    so is `:` (`c:d.jsonl` unencoded would read as the scheme `c`). Outside the checkout: a file:// URI.
    """
    inside = _inside(encodable(path), root)
    if inside is not None:
        return quote(inside, safe="/"), True
    return Path(os.path.abspath(encodable(path))).as_uri(), False


def file_of(finding: Finding, spec: str | None) -> str | None:
    """The file a finding is in: its own, else the spec for a spec-key finding, else none."""
    if finding.file:
        return finding.file
    if finding.key and spec:
        return spec
    return None


def anchor_of(finding: Finding, report: GateReport) -> str | None:
    """A file to anchor a finding that names none (a mini-run's, an advisor's): the spec, else the training file.

    GitHub code scanning refuses a whole SARIF upload if one result has no location.
    """
    place = file_of(finding, report.spec) or report.spec
    if place:
        return place
    train = report.fingerprints.get("train")
    name = train.get("file") if isinstance(train, dict) else None
    return name if isinstance(name, str) and name else None
