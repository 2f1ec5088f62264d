"""No cyclic garbage collection while a process of ours imports what it keeps until it ends.

    own_process()              # by the process's own entry points only (the CLI, the fork server)
    with collections_held():   # around a big import: the training stack, Prefect, MLflow
        import torch
    with collections_paused():  # building many objects that form no cycle, in any process
        rows = [list(ids) for ids in encoded]

Python's cyclic collector runs a full collection each time the objects that survived the earlier
ones have grown by a quarter, and each walks every object alive. Importing a big stack grows them
that way again and again, and each pass finds nothing to free: modules, classes and functions live
as long as the process. Counted with `gc.callbacks` (issue 33; docs/benchmarks.md, session 46): the
fork server's import of torch, transformers and peft ran 10 full collections, 0.58 CPU s; a sweep's
own process, importing Prefect and MLflow, 6 of them, 0.66 CPU s; a `tunegate check --mini-run`
process paid them at its import and again at every full collection of its mini-run (its adapter
check's `gc.collect` alone walked 0.22 s of imported objects).

So while any block holds collections none runs; when the last holder lets go (the main thread and
the import-ahead thread may hold at once), everything alive then is frozen (`gc.freeze`: left out
of every later collection, still freed as soon as nothing refers to it) and collection turns back
on for what the command does next. What is frozen is never collected as a cycle: garbage in a
reference cycle made while collections were held stays until the process ends, which only a
command's own process may accept. Elsewhere (a library caller or a test calling `main()` in its
process) `collections_held()` changes nothing. `collections_paused()` is the other, milder use: no
collection while a block builds objects that form no cycle, in any process, nothing frozen after.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_own: list[bool] = []  # set by the process's own entry: no caller of main() shares the process
_lock = threading.Lock()
_holders = 0
_resume = False  # whether collection was on when the first holder came (it is turned back on then)


def own_process() -> None:
    """Called by the process's own entry points: what a command does to the process stays its own."""
    _own.append(True)


def is_own_process() -> bool:
    """Whether the command runs in a process of its own (a changed library setting harms no caller),
    e.g. `tunegate samples` loading its tokenizer without torch (tunegate.training.torch_free)."""
    return bool(_own)


@contextlib.contextmanager
def collections_held() -> Iterator[None]:
    """No cyclic collection while the block runs, in a process of our own (see the module doc)."""
    if not _own:
        yield
        return
    _hold()
    try:
        yield
    finally:
        _let_go()


def _hold() -> None:
    global _holders, _resume
    with _lock:
        if not _holders:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1


def _let_go() -> None:
    global _holders
    with _lock:
        _holders -= 1
        if not _holders:
            gc.freeze()
            if _resume:
                gc.enable()


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """No cyclic collection while the block builds many objects that form no cycle (lists of ints),
    in any process; nothing is frozen after. Each collection would walk the whole process again (the
    tokenizer, the training stack): reading back 2,570 encoded rows in a trainer took 0.25 CPU s, 0.20
    of them collections, 0.005 s without (tunegate.fullrun.token_cache)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
