"""A sweep candidate's mini-run in a child of the fork server, or here when there is none.

    report = mini_run_report(parsed, facts)   # the same GateReport as check(parsed, only={"mini-run"}, facts=facts)

The mini-run needs torch, transformers and peft; in the sweep's own process that import cost
~5 CPU s on the 2-core machine, on top of the same import in every candidate's training process
(issue 15). When this sweep's fork server runs (`tunegate.fullrun.forks`), the mini-run runs in
a child forked from it instead: the parsed spec and the earlier stages' facts go over as JSON,
the child runs exactly `check(parsed, only={"mini-run"}, facts=facts)` and writes the report's
JSON, read back here. Same stage, same inputs, same report; this process never imports torch.

A child that ends without its report is a crash of ours, raised (the sweep makes the candidate
`errored`, not rejected), with the tail of its output.
"""
from __future__ import annotations

import collections
import tempfile
from pathlib import Path

from tunegate.facts import GateFacts
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec

TAIL_LINES = 30


def mini_run_report(parsed: ParsedSpec, facts: GateFacts) -> GateReport:
    """The candidate's mini-run stage as a report (run in a forked child when the sweep has a fork server)."""
    from tunegate.fullrun.forks import FORKS

    if FORKS.running():
        with tempfile.TemporaryDirectory(prefix="tunegate-mini-run-") as folder:
            report_path = Path(folder) / "report.json"
            args = {"parsed": parsed.model_dump_json(), "facts": facts.model_dump_json(), "report": str(report_path)}
            job = FORKS.run("mini-run", args)
            if job is not None:
                return _read_back(job, report_path)
    from tunegate.gate import check

    return check(parsed, only={"mini-run"}, facts=facts)


def _read_back(job, report_path: Path) -> GateReport:
    from tunegate import progress

    progress.note(f"mini-run in process {job.pid} (forked: torch, transformers, peft already imported)")
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    for line in job.stdout:
        tail.append(line.rstrip("\n"))
    code = job.wait()
    if not report_path.is_file():
        shown = "\n".join(tail)
        raise RuntimeError(f"the mini-run's process exited with code {code} without its report; last output:\n{shown}")
    return GateReport.model_validate_json(report_path.read_text(encoding="utf-8"))
