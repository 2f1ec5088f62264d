"""Child processes that do not outlive the command that started them.

    subprocess.Popen(cmd, preexec_fn=on_parent_death(signal.SIGTERM))

`parent_death.py`: Linux's parent-death signal, for a server or worker the command starts.
"""
from tunegate.processes.parent_death import on_parent_death

__all__ = ["on_parent_death"]
