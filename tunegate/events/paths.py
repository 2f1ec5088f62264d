"""Paths in events: relative to the project root, so the worker's own checkout resolves them.

    root = project_root("examples/quickstart.yaml")   # the folder holding prefect.yaml (else .git), or None
    portable("examples/quickstart.yaml", root)        # 'examples/quickstart.yaml', whatever the sender's cwd
    root_digest(root)                                  # which checkout sent it, without naming the folder
    on_this_checkout("examples/quickstart.yaml", "spec")   # the worker's file, or a UsageError naming it

An event sent from CI names a file on the CI runner; the worker that runs the triggered flow has its
own checkout of the same project, at another place. A deployment's flow runs in the folder
`prefect deploy` ran in (prefect.yaml's folder: a `set_working_directory` step), so a path relative
to the project root is the same file there. The sender's absolute folder never travels: only its
digest, which tells two checkouts apart (and is the same for every event of one checkout). A file
in no project (no prefect.yaml or .git above it) can only be shared as it is, on a volume both
machines mount: its absolute path travels, as before.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tunegate.errors import UsageError

# What marks a project's root folder, nearest first: where `prefect deploy` runs (its working
# directory is where a worker runs the flows), else the repository's top.
MARKERS = ("prefect.yaml", ".git")


def project_root(path: str | Path) -> Path | None:
    """The nearest folder above `path` holding prefect.yaml, else .git; None when there is none."""
    start = Path(path).resolve().parent
    for marker in MARKERS:
        for folder in (start, *start.parents):
            if (folder / marker).exists():
                return folder
    return None


def portable(path: str | Path, root: Path | None) -> str:
    """`path` relative to `root`, POSIX style; a path in no project, or outside it, as it is (absolute)."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root).as_posix() if root is not None else str(resolved)
    except ValueError:
        return str(resolved)


def root_digest(root: Path) -> str:
    """SHA-256 of the root folder's absolute path: one id per checkout, its place not revealed."""
    return hashlib.sha256(os.fsencode(root.resolve())).hexdigest()


def on_this_checkout(path: str | Path, what: str) -> Path:
    """The file an event's (or a deployment parameter's) `path` names here: relative to this process's
    working directory, which for a deployment's flow run is the project root of the worker's checkout.

    Raises:
        UsageError: no such file here; the message names the path, the folder it was looked for in and why.
    """
    here = Path(path) if Path(path).is_absolute() else Path.cwd() / path
    if here.exists():
        return here
    from tunegate.pathguard import shown

    raise UsageError(f"the {what} {shown(path)} is not in this checkout ({shown(here)} does not exist): events and "
                     "deployment parameters name files relative to the project root (the folder holding "
                     "prefect.yaml); run the worker from a checkout of the same project at the same commit")
