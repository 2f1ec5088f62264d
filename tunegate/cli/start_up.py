"""How the process of a static command starts: the settings that make `tunegate check` answer fast.

    with static_settings(["check", "spec.yaml"]):   # set while the command runs, removed after
        ...

A check of a small spec is almost all start-up and shut-down (docs/benchmarks.md, issue 15).
Leaving costs as much as some imports: at exit the interpreter runs the cyclic garbage collector
over every object start-up made (pydantic's schemas, the modules' classes) only to free memory the
process is about to give back, ~20-30 ms of a 0.25 s rejection. `leave(argv, code)`, called only by
the process's own entry points (the console script, `python -m tunegate`), freezes those objects
first, so the collector skips them; atexit handlers and every object freed by its reference count
still run (the log file is flushed and closed by logging's own atexit handler), only garbage held
in reference cycles is not collected, and only after a static command, whose files are all
written and closed by then. A caller of `main()` (the tests, a library user) is never frozen.

Start-up itself runs ~60 collections (10-15 ms of a rejection) over objects that all live until
the exit, so the same entry points hold collections while a static command loads its modules
(`hold_collections`), then `started()` freezes what the start-up made and turns collection back
on before the command runs: a check of a large file collects its own garbage as before.

Pydantic spends part of the start-up on what such a command never uses: it looks for plugins at its first model,
scanning every installed package's entry points (~10-20 ms). Plugins instrument an application's
own models; these are tunegate's. (numpy's OpenBLAS thread pool, the other such cost, is kept to
one thread where the overlap stage imports numpy: tunegate.overlap.numeric, for any caller.)

Only commands that start no other program get the setting, and not a check that trains
(--mini-run), so no process but ours and its forked readers sees it. A value the user set is kept;
ours is removed on the way out, so a caller of `main()` keeps its environment.
"""
from __future__ import annotations

import contextlib
import gc
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


_held: list[bool] = []  # whether hold_collections turned collection off (the process's entry only)


def hold_collections(argv: list[str]) -> None:
    """No cyclic collection until `started()`, if `argv` runs a static command (see the module doc)."""
    if is_static(argv) and gc.isenabled():
        gc.disable()
        _held.append(True)


def started() -> None:
    """The command's modules are loaded: keep what start-up made out of later collections, collect again."""
    if _held:
        _held.clear()
        gc.freeze()
        gc.enable()


def leave(argv: list[str], code: int) -> int:
    """Return `code`, after freezing every object if `argv` ran a static command (see the module doc)."""
    if is_static(argv):
        gc.freeze()
    return code
