"""A sweep candidate's mini-run in a child of the fork server, or here when there is none.

    report = mini_run_report(parsed, facts)   # the same GateReport as check(parsed, only={"mini-run"}, facts=facts)
    report = mini_run_report(parsed, facts, folder)  # a sweep candidate's: its token audit shared in folder
    report = forked_mini_run(parsed, facts)   # a preflight's: in the fork server's child, or None (run it here)

The mini-run needs torch, transformers and peft; in the sweep's own process that import cost
~5 CPU s on the 2-core machine, on top of the same import in every candidate's training process
(issue 15). When this sweep's fork server runs (`tunegate.fullrun.forks`), the mini-run runs in
a child forked from it instead: the parsed spec and the earlier stages' facts go over as JSON,
the child runs exactly `check(parsed, only={"mini-run"}, facts=facts)` and writes the report's
JSON, read back here. Same stage, same inputs, same report; this process never imports torch.

Without a fork server (a Dask or Ray worker runs the candidate) a mini-run that will use a GPU
runs in a fresh process of its own (`python -m tunegate.sweep.mini_run_apart`): a long-lived worker
never frees CUDA memory the mini-run allocated, while the candidate's training process uses the same
GPU, so a good candidate could be rejected for an OOM (TG706), and a sticky CUDA error would break
every later candidate on that worker (issue 31). On a CPU it runs here.

A child that ends without its report is a crash of ours, raised (the sweep makes the candidate
`errored`, not rejected), with the tail of its output; one that says the stage could not run as
asked (`forked_jobs.USAGE`, a UsageError there) raises that UsageError here, as the stage run in
this process would.

    python -m tunegate.sweep.mini_run_apart ARGS.json     # {"parsed": ..., "facts": ..., "report": PATH}
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tunegate.errors import UsageError
from tunegate.facts import GateFacts
from tunegate.fullrun.candidate_job import MINI_RUN_DONE
from tunegate.fullrun.forked_jobs import USAGE
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec

TAIL_LINES = 30


def mini_run_report(parsed: ParsedSpec, facts: GateFacts, token_cache: str | None = None) -> GateReport:
    """The candidate's mini-run stage as a report (run in a forked child when the sweep has a fork
    server); `token_cache`: the sweep's token folder, where candidates share their token audit."""
    forked = _in_candidate_child(parsed, facts, token_cache)
    if forked is not None:
        return forked
    if will_use_a_gpu(parsed):
        return mini_run_in_child(parsed, facts, token_cache)
    from tunegate.gate import check
    from tunegate.minirun.audit_cache import kept_in

    with kept_in(token_cache):
        return check(parsed, only={"mini-run"}, facts=facts)


def forked_mini_run(parsed: ParsedSpec, facts: GateFacts) -> GateReport | None:
    """The mini-run stage run in a child of this process's fork server; None when none runs or it
    refuses the job (the caller runs the stage itself)."""
    from tunegate.fullrun.forks import FORKS

    if not FORKS.running():
        return None
    with tempfile.TemporaryDirectory(prefix="tunegate-mini-run-") as folder:
        report_path = Path(folder) / "report.json"
        job = FORKS.run("mini-run", _job_args(parsed, facts, report_path))
        return _read_back(job, report_path) if job is not None else None


def _in_candidate_child(parsed: ParsedSpec, facts: GateFacts, token_cache: str | None) -> GateReport | None:
    """The mini-run in a child of the fork server that then waits, held for the candidate's
    training (`tunegate.fullrun.candidate_job`); None when the server forks nothing."""
    import shutil

    from tunegate.fullrun import held_jobs
    from tunegate.fullrun.forks import FORKS

    if not FORKS.running():
        return None
    folder = Path(tempfile.mkdtemp(prefix="tunegate-candidate-"))
    report_path = folder / "report.json"
    args = {"mini_run": _job_args(parsed, facts, report_path, token_cache), "decision": str(held_jobs.channel(folder))}
    job, env = FORKS.run("candidate", args), FORKS.env()
    if job is None or env is None:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    try:
        report = _read_back(job, report_path, until=MINI_RUN_DONE)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    held_jobs.hold(parsed.path, job, folder, env)  # the sweep trains it there, or releases it
    return report


def will_use_a_gpu(parsed: ParsedSpec) -> bool:
    """Whether this candidate's mini-run computes on a CUDA device here (asked for, or found by auto)."""
    from tunegate.fullrun.devices import parent_devices

    wanted = parsed.spec.gate.mini_run.device if parsed.spec is not None else "auto"
    return wanted == "cuda" or (wanted == "auto" and bool(parent_devices(os.environ)))


def mini_run_in_child(parsed: ParsedSpec, facts: GateFacts, token_cache: str | None = None) -> GateReport:
    """The mini-run in a fresh process of its own: its CUDA memory and state end with it."""
    with tempfile.TemporaryDirectory(prefix="tunegate-mini-run-") as folder:
        report_path, args_path = Path(folder) / "report.json", Path(folder) / "args.json"
        args_path.write_text(json.dumps(_job_args(parsed, facts, report_path, token_cache)), encoding="utf-8")
        job = subprocess.Popen([sys.executable, "-m", "tunegate.sweep.mini_run_apart", str(args_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        return _read_back(job, report_path)


def _job_args(parsed: ParsedSpec, facts: GateFacts, report_path: Path,
              token_cache: str | None = None) -> dict[str, Any]:
    return {"parsed": parsed.model_dump_json(), "facts": facts.model_dump_json(), "report": str(report_path),
            "token_cache": token_cache}


def _read_back(job, report_path: Path, until: str | None = None) -> GateReport:
    """The report the job wrote, read once it exits, or once it prints the line `until` (a
    candidate's child, which then waits for the sweep's decision). The job is stopped with the
    command if it is cut short (tunegate.processes.followed)."""
    from tunegate import progress
    from tunegate.processes.followed import followed

    progress.note(f"mini-run in process {job.pid}")
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    with followed(job):
        for line in job.stdout:
            if progress.relayed(line):  # the child's notes show here as the stage's own
                continue
            tail.append(line.rstrip("\n"))
            if until is not None and tail[-1] == until and report_path.is_file():
                return GateReport.model_validate_json(report_path.read_text(encoding="utf-8"))
        code = job.wait()
    if not report_path.is_file():
        if tail and tail[-1].startswith(USAGE):  # the stage's usage error, raised as it is in-process
            raise UsageError(tail[-1][len(USAGE):])
        shown = "\n".join(tail)
        raise RuntimeError(f"the mini-run's process exited with code {code} without its report; last output:\n{shown}")
    return GateReport.model_validate_json(report_path.read_text(encoding="utf-8"))


if __name__ == "__main__":
    from tunegate.fullrun.forked_jobs import mini_run_job
    from tunegate.processes.held_collections import own_process

    own_process()  # a process of its own: the mini-run imports its stack with the collector held (minirun.stage)
    sys.exit(mini_run_job(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
