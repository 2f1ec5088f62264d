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
(Where it can, the entry does better still: it runs the exit handlers and ends the process without
the teardown at all, tunegate.cli.fast_exit; freezing is what is left when another thread runs.)

Start-up itself runs ~60 collections (10-15 ms of a rejection) over objects that all live until
the exit, so the same entry points hold collections while a static command loads its modules
(`hold_collections`), then `started()` freezes what the start-up made and turns collection back
on before the command runs: a check of a large file collects its own garbage as before.

Pydantic spends part of the start-up on what such a command never uses: it looks for plugins at
its first model, scanning every installed package's entry points (~10-20 ms). Plugins instrument
an application's own models; these are tunegate's. With the look-up off, its loader module still
imports importlib.metadata (email, zipfile, csv, tempfile: ~5 % of a rejection's instructions)
only to return no plugins, so while our setting is in force the loader is a module of ours that
returns none, exactly what pydantic's own returns under that setting (any other name it is asked
for comes from pydantic's own); it is removed on the way out, so a caller of `main()` gets
pydantic's again. (numpy's OpenBLAS thread pool, the other such cost, is kept to one thread where
the overlap stage imports numpy: tunegate.overlap.numeric, for any caller.)

Only commands that start no other program get the setting, and not a check that trains
(--mini-run), so no process but ours and its forked readers sees it. A value the user set is kept;
ours is removed on the way out, so a caller of `main()` keeps its environment.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
import types
from collections.abc import Iterator

from tunegate.processes.held_collections import collections_held

STATIC_COMMANDS = ("check", "lint")
PLUGINS_OFF = "PYDANTIC_DISABLE_PLUGINS"
SETTINGS = {PLUGINS_OFF: "__all__"}
PLUGIN_LOADER = "pydantic.plugin._loader"  # what pydantic imports `get_plugins` from at each new validator
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
    loader = _no_plugin_loader() if PLUGINS_OFF in ours and PLUGIN_LOADER not in sys.modules else None
    if loader is not None:
        sys.modules[PLUGIN_LOADER] = loader
    try:
        yield
    finally:
        for name in ours:
            os.environ.pop(name, None)
        if loader is not None and sys.modules.get(PLUGIN_LOADER) is loader:
            del sys.modules[PLUGIN_LOADER]


def _no_plugin_loader() -> types.ModuleType:
    """A stand-in for pydantic's plugin loader that finds no plugins, as pydantic's does when told to."""
    loader = types.ModuleType(PLUGIN_LOADER, f"No pydantic plugins while {PLUGINS_OFF} is set (tunegate.cli.start_up).")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    loader.__getattr__ = _from_pydantics_loader  # type: ignore[attr-defined]
    return loader


def _no_plugins() -> tuple:
    return ()


def _from_pydantics_loader(name: str) -> object:
    """Any other name from pydantic's own loader, which then replaces the stand-in."""
    if name.startswith("__"):  # the import system's own probes (__path__, __spec__ ...)
        raise AttributeError(name)
    sys.modules.pop(PLUGIN_LOADER, None)
    return getattr(importlib.import_module(PLUGIN_LOADER), name)


_held: list[contextlib.ExitStack] = []  # the hold hold_collections took (the process's entry only)


def hold_collections(argv: list[str]) -> None:
    """No cyclic collection until `started()`, if `argv` runs a static command (see the module doc):
    `collections_held` (tunegate.processes.held_collections), from the entry to `started()`."""
    if is_static(argv) and gc.isenabled():
        hold = contextlib.ExitStack()
        hold.enter_context(collections_held())
        _held.append(hold)


def started() -> None:
    """The command's modules are loaded: keep what start-up made out of later collections, collect again."""
    while _held:
        _held.pop().close()


def leave(argv: list[str], code: int) -> int:
    """Return `code`, after freezing every object if `argv` ran a static command (see the module doc)."""
    if is_static(argv):
        gc.freeze()
    return code
