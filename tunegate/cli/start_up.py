"""How the process of a static command starts: the settings that make `tunegate check` answer fast.

    with static_settings(["check", "spec.yaml"]):   # set while the command runs, removed after
        ...

A check of a small spec is almost all start-up (docs/benchmarks.md, issue 15), and two libraries
spend part of it on things such a command never uses:

- pydantic looks for plugins at its first model, scanning every installed package's entry points
  (~10-20 ms). Plugins instrument an application's own models; these are tunegate's.
- numpy's OpenBLAS starts a thread per core when numpy is imported (the near-duplicate pass), and
  on a 2-core machine that costs ~85 ms of CPU and ~55 ms of a 0.4 s approval. The static stages
  call no BLAS routine (no matrix product: hashing, sorting and comparisons), and a large file is
  read by worker processes, one per core, each better off with one thread.

Only commands that start no other program get them, and not a check that trains (--mini-run: its
torch may use OpenBLAS), so no process but ours and its forked readers sees them. A value the user
set is kept; ours are removed on the way out, so a caller of `main()` keeps its environment (a
numpy it first imported inside the call keeps its one thread: OpenBLAS reads the setting once).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

STATIC_COMMANDS = ("check", "lint")
SETTINGS = {"PYDANTIC_DISABLE_PLUGINS": "__all__", "OPENBLAS_NUM_THREADS": "1"}
TRAINS = "--mini-run"


def is_static(argv: list[str]) -> bool:
    """Whether `argv` runs a static command that does not train (argparse also takes `--mini`)."""
    trains = any(len(arg) > 3 and TRAINS.startswith(arg) for arg in argv)
    return bool(argv) and argv[0] in STATIC_COMMANDS and not trains


@contextlib.contextmanager
def static_settings(argv: list[str]) -> Iterator[None]:
    """Set SETTINGS (those the user did not set) while a static command named first in `argv` runs."""
    static = is_static(argv)
    ours = [name for name in SETTINGS if static and name not in os.environ]
    for name in ours:
        os.environ[name] = SETTINGS[name]
    try:
        yield
    finally:
        for name in ours:
            os.environ.pop(name, None)
