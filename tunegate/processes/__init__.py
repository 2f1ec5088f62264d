"""Work beside a command's main thread: child processes that do not outlive the command, and a
thread importing ahead what the command will need.

    subprocess.Popen(cmd, preexec_fn=on_parent_death(signal.SIGTERM))
    import_ahead(TRACKING_MODULES)

`parent_death.py`: Linux's parent-death signal, for a server or worker the command starts;
`import_ahead.py`: the import thread, and the module lists the flow commands give it.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name's module, imported on first use (PEP 562): importing one module of the wing
# loads that module alone, not the wing's front door and all it imports.
_HOME = {"on_parent_death": "tunegate.processes.parent_death"}

__all__ = ["on_parent_death"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value
