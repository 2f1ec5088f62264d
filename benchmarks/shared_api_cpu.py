"""The CPU a command's shared local API used while the command ran, for the flow benchmarks.

The shared local API (tunegate.local_api.shared) runs in a session of its own and outlives the
command that started it, so no command waits for it and its CPU is never in the command's rusage
(RUSAGE_CHILDREN). A benchmark reads the server its Prefect home's record names before and after
each command and charges the command the difference:

    before = shared_api_cpu(home)
    ... run the command ...
    cpu = children_cpu + api_cpu_over(before, shared_api_cpu(home))
"""
from __future__ import annotations

import json
import os
from pathlib import Path


def shared_api_cpu(home: Path) -> tuple[int, float] | None:
    """(pid, CPU seconds so far) of the shared local API the Prefect home's record names, if it runs."""
    try:
        pid = json.loads((home / "tunegate" / "local-api.json").read_text(encoding="utf-8"))["pid"]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def api_cpu_over(before: tuple[int, float] | None, after: tuple[int, float] | None) -> float:
    """The shared API's CPU between two readings: the same server's difference, or all of one that
    started meanwhile (the command started it). One that stopped meanwhile cannot be read: 0."""
    if after is None:
        return 0.0
    if before is not None and before[0] == after[0]:
        return after[1] - before[1]
    return after[1]
