"""Work beside a command's main thread, and what a process of ours does to itself: child processes
that do not outlive the command, a thread importing ahead what the command will need, the
collector and the heap.

    subprocess.Popen(cmd, preexec_fn=on_parent_death(signal.SIGTERM))
    with followed(proc): ...                 # stopped if the command is cut short
    import_ahead(TRACKING_MODULES)
    import_mlflow()
    with collections_held(): ...
    give_back_freed()

`parent_death.py`: Linux's parent-death signal, for a server or worker the command starts;
`followed.py`: the trainings and mini-runs a thread waits on, stopped when the command is cut short;
`import_ahead.py`: the import thread, and the module lists the flow commands give it;
`mlflow_import.py`: MLflow imported without the packages its tracking does not use;
`held_collections.py`: which process is our own, and no collection while it imports what it keeps;
`freed_memory.py`: the heap's free pages handed back where a phase that held a big block ends, or
kept for the next blocks of a process that trains.
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"on_parent_death": "tunegate.processes.parent_death",
         "give_back_freed": "tunegate.processes.freed_memory"}

__all__ = ["give_back_freed", "on_parent_death"]
__getattr__ = front_door(__name__, _HOME)
