"""What a child of the fork server runs: its first line, and the mini-run job.

    print(forked_line(), flush=True)   # every job's first output line (a training's train.log)
    code = mini_run_job(args)          # {"parsed": ..., "facts": ..., "report": PATH, "token_cache": DIR|None}

Here, not in `tunegate.fullrun.fork_server`, so the jobs the server dispatches to
(`tunegate.fullrun.candidate_job` runs a mini-run, then a training) need not import it back.
"""
from __future__ import annotations

import os
import sys

FORKED = "forked from the fork server"  # a job's first output line (the candidate's train.log)
# A mini-run job's last line when the stage cannot run as asked (a UsageError: the cache is not a
# folder, an extra is missing): the parent raises it again, as the stage run in-process would have.
USAGE = "tunegate usage error: "


def forked_line() -> str:
    """A job's first output line (a training's train.log begins with it)."""
    return f"{FORKED} (pid {os.getpid()}, the training stack imported before the job was known)"


def mini_run_job(args: dict) -> int:
    """The mini-run of a parsed spec with the facts the earlier stages gathered; its report JSON
    written to args["report"] (renamed into place: a half-written report is never read). A
    UsageError is its last line (USAGE) and exit code 2, and no report. With args["token_cache"] (a
    sweep's candidate) its token audit is kept there for the next candidate, or read back from it."""
    from pathlib import Path

    from tunegate import progress
    from tunegate.errors import EXIT_USAGE, UsageError
    from tunegate.facts import GateFacts
    from tunegate.gate import check
    from tunegate.minirun.audit_cache import kept_in
    from tunegate.spec.check import ParsedSpec

    progress.relay(sys.stdout)  # "loading the model", "step 2/4 ...": the parent shows them
    parsed = ParsedSpec.model_validate_json(args["parsed"])
    facts = GateFacts.model_validate_json(args["facts"])
    try:
        with kept_in(args.get("token_cache")):
            report = check(parsed, only={"mini-run"}, facts=facts)
    except UsageError as exc:
        print(f"{USAGE}{exc}", flush=True)
        return EXIT_USAGE
    path = Path(args["report"])
    aside = path.with_name(path.name + ".part")
    aside.write_text(report.model_dump_json(), encoding="utf-8")
    os.replace(aside, path)
    return 0
