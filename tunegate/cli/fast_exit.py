"""How a command's process ends: its exit handlers, then no interpreter teardown.

    code = run(argv)
    end_now(code)        # a static command: returns only where ending now is not safe (see below)

    code = skip_teardown_at_exit()   # a flow command, first thing: its handler must run last
    ...; code.append(exit_code)      # armed once the command has answered

A `tunegate check` has written its report by the time it returns; what the interpreter does after
that (freeing every module's objects: numpy, pydantic, the report's models, the read's indexes)
changes nothing the user sees, and on the 2-core machine it took ~0.1 s of a 50 MB check's ~1.1 s
(issue 15: `python -m tunegate check` against `main()` called from `python -c`, paired, medians of 8;
that difference also holds the start-up's held collections, tunegate.cli.start_up). So the
process runs every exit handler (temporary folders removed, logs flushed), flushes its output and
ends. Only the process's own entry point calls it (`tunegate.cli.main.entry`:
the console script, `python -m tunegate`; a caller of `main()`, pytest or a notebook, keeps its own
exit), and it ends nothing while another thread still runs (whose end, and whose exit hooks, the
interpreter would wait for); `tunegate.cli.start_up.leave` then spares the exit's collections.

A flow command (sweep, preflight, launch) always has other threads (Prefect's), so it ends from
its last exit handler instead, after threading's exit hooks (Prefect's drains) and every other
handler (the local API's stop, MLflow's): with torch, transformers, Prefect and MLflow loaded the
teardown took 3.3 s of a sweep's wall time and ~1.5 s of a preflight's on the 2-core machine.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading


def end_now(code: int) -> None:
    """End the process with `code` after its exit handlers, skipping the interpreter's teardown."""
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    # Any other thread, daemon or not, may have work its exit hooks finish (Prefect drains its
    # event queue from threading's exit hooks, which os._exit would skip): then end as usual.
    if threading.active_count() > 1 or run_handlers is None:
        return
    run_handlers()
    _flush_output()
    os._exit(code)


def _flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what the interpreter's exit would also meet
            pass


def skip_teardown_at_exit() -> list[int]:
    """When this process is the `tunegate` command, end it after the last exit handler without the
    interpreter's teardown of every module, with the code appended to the list returned (armed only
    once the command has answered); a library caller (pytest, a notebook) keeps its own exit."""
    from pathlib import Path

    code: list[int] = []
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if getattr(spec, "parent", None) == "tunegate" or Path(sys.argv[0]).name == "tunegate":  # python -m tunegate

        def exit_now() -> None:
            if code:
                _flush_output()
                os._exit(code[0])

        atexit.register(exit_now)
    return code
