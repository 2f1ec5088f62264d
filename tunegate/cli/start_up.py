"""How the process of a static command starts: the settings that make `tunegate check` answer fast.

    with static_settings(["check", "spec.yaml"]):   # set while the command runs, removed after
        ...

A check of a small spec is almost all start-up (docs/benchmarks.md, issue 15), and pydantic
spends part of it on what such a command never uses: it looks for plugins at its first model,
scanning every installed package's entry points (~10-20 ms). Plugins instrument an application's
own models; these are tunegate's. (numpy's OpenBLAS thread pool, the other such cost, is kept to
one thread where the overlap stage imports numpy: tunegate.overlap.numeric, for any caller.)

Only commands that start no other program get the setting, and not a check that trains
(--mini-run), so no process but ours and its forked readers sees it. A value the user set is kept;
ours is removed on the way out, so a caller of `main()` keeps its environment.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

STATIC_COMMANDS = ("check", "lint")
SETTINGS = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
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
