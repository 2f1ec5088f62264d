"""A child that gets a signal when the process that started it dies (Linux's PR_SET_PDEATHSIG).

    subprocess.Popen(cmd, preexec_fn=on_parent_death(signal.SIGTERM))   # None elsewhere: no preexec_fn

Prefect's API, a sweep's local API: each is stopped by an atexit hook, which a SIGKILL (or an
unhandled SIGTERM) of the command never runs, so such a child stayed behind as an orphan. With
this the kernel signals it however the command dies. The kernel ties the signal to the *thread*
that forked the child, so start it from one that lives as long as the process (the main thread).
A child whose parent died before it could set the signal up exits at once rather than run on.
"""
from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def on_parent_death(signum: int) -> Callable[[], None] | None:
    """A preexec_fn sending the child `signum` when this process dies; None where not Linux."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    parent = os.getpid()

    def set_up() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return set_up
