"""Whether a process the test started (or its helper started) has ended."""
from __future__ import annotations

import os
import time


def gone(pid: int, within_s: float = 10.0) -> bool:
    """True once `pid` no longer runs (a zombie, exited but not yet reaped, counts as gone)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":
                    return True
        except FileNotFoundError:  # reaped between the two looks
            return True
        time.sleep(0.05)
    return False
