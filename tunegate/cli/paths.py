"""The path guard at the command line: data files a command will read, checked before it starts.

    require_files(spec, "data.train", "data.validation")   # UsageError naming the key and why
    require_flow_inputs(parsed)                             # the spec path and tracking store a flow needs

`tunegate check` and `tunegate lint` report an unreadable data file as a finding (TG240), since
checking the files is their job. The commands that only read the data on the way to something
else (estimate, advise) and the flow commands (preflight, sweep, launch, which would start
Prefect first) refuse it up front with the same guard (`tunegate.pathguard`), so a folder, a FIFO,
/dev/zero or a symlink loop is a usage error in a second, never a hang, a crash or a silent
estimate of zero tokens. So is what only a flow needs: a spec path Prefect can carry (its
parameters are JSON, so the path must be UTF-8) and a tracking store that can be opened (a valid
URI, not a folder, a server that answers) and, for the built-in tiny model not built yet, a user
cache it can be built in ($TUNEGATE_CACHE naming a file or a read-only folder), said before
Prefect's 10-20 s of start-up.
"""
from __future__ import annotations

import os
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


def require_flow_inputs(parsed: Any) -> None:
    """Raise UsageError (or ServiceUnavailable) when a flow could not start on this parsed spec: its path
    is not UTF-8 (a Prefect parameter is JSON), its tracking store cannot be opened, or the built-in
    tiny model is not built yet and the user cache cannot take it (not a folder, or not writable)."""
    from tunegate.pathguard import shown
    from tunegate.tracking.store import check_store, resolve_tracking_uri
    from tunegate.training.tiny_model import TINY_ID, ensure_buildable

    where = os.path.abspath(parsed.path)  # the data paths resolve against its folder: they are carried too
    try:
        os.fsencode(where).decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the spec path {shown(where)} is not UTF-8, and a Prefect flow carries it as JSON; "
                         "rename the file or its folder (or run `tunegate check` on it)") from None
    if parsed.spec is not None:
        check_store(resolve_tracking_uri(parsed.spec, parsed.path))
        if parsed.spec.model.id == TINY_ID:  # the flow's mini-run builds it into the user cache
            ensure_buildable()
