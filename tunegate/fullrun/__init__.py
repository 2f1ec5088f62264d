"""The full run: only from an approval that still matches the files, launched as the cluster would.

    tunegate launch examples/quickstart.yaml

    approval = approved_report(parse_spec("run.yaml"))   # ApprovalError when missing or stale
    result = launch(spec, "run.yaml")                     # the trainer under accelerate/torchrun/python
"""
from tunegate.fullrun.approval import approved_report
from tunegate.fullrun.launcher import launch

__all__ = ["approved_report", "launch"]
