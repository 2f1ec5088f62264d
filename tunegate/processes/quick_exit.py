"""What a process about to end need not undo: torch's operator libraries.

    import_stack()
    skip_library_teardown()   # its jobs' exits (atexit handlers, then os._exit) skip the undoing

torch keeps a `weakref.finalize` for every operator library it and the training stack define
(torch.library.Library: 176 once the fork server imported it), each marked to run at exit, where it
takes the library's operators out of torch's dispatcher again. In a process that is ending, that is
pure cost: 25 ms of each sweep candidate's job, after its result was written and before the sweep
could see it end (cProfile of the job's `atexit._run_exitfuncs`: 28 ms in all, 2026-12-07). The
fork server marks them not to run at exit once its stack is imported, so no job it forks runs them;
the other finalizers a job's exit runs (a temporary folder's removal) and its atexit handlers
(logging's flush) still run.
"""
from __future__ import annotations

import weakref


def skip_library_teardown() -> int:
    """Mark torch's operator-library finalizers not to run at exit; how many were marked (0 without
    torch, or where this Python keeps its finalizers otherwise)."""
    try:
        from torch.library import _del_library
    except ImportError:
        return 0
    registry = getattr(weakref.finalize, "_registry", None)
    if not isinstance(registry, dict):
        return 0
    marked = 0
    for finalizer in list(registry):
        held = finalizer.peek()
        if held is not None and held[1] is _del_library and finalizer.atexit:
            finalizer.atexit = False
            marked += 1
    return marked
