"""The full run: only from an approval that still matches the files, launched as the cluster would.

    tunegate launch examples/quickstart.yaml

    approval = approved_report(parse_spec("run.yaml"))   # ApprovalError when missing or stale
    result = launch(spec, "run.yaml")                     # the trainer under accelerate/torchrun/python
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"approved_report": "tunegate.fullrun.approval", "launch": "tunegate.fullrun.launcher"}

__all__ = ["approved_report", "launch"]
__getattr__ = front_door(__name__, _HOME)
