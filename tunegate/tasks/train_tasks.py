"""The full run's steps as Prefect tasks: verify the approval, then launch the training."""
from __future__ import annotations

import time

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from tunegate import progress
from tunegate.fullrun import approved_report, launch
from tunegate.fullrun.live_run import live_env
from tunegate.fullrun.result import TrainResult
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.tracking.session import TrackingSession


# Never cached: the check after a review pause must read the files as they are then, not reuse the first.
@task(name="verify-approval", cache_policy=NO_CACHE)
def verify_approval_task(parsed: ParsedSpec, report_file: str | None = None) -> GateReport:
    """Refuse unless a preflight approved this exact spec and data (digests match the files now)."""
    if report_file:  # named by the approval event, relative to the project root: this checkout's
        from tunegate.events.paths import on_this_checkout

        on_this_checkout(report_file, "approval report")
    return approved_report(parsed, report_file)


class FullTraining(BaseModel):
    """The full run's result, and when its training ran (epoch seconds): its run's duration in MLflow."""

    result: TrainResult
    started: float
    ended: float


@task(name="full-training", tags=["gpu"])
def full_training_task(parsed: ParsedSpec, session: TrackingSession | None = None,
                       resume: bool = False) -> FullTraining:
    """Launch tunegate.fullrun.trainer (HF Trainer + PEFT LoRA with the health callback) and wait for it;
    its metrics stream to the session's parent run while it trains."""
    logger = get_run_logger()
    live = live_env(session.uri, session.parent_run_id) if session is not None else None

    def log(line: str) -> None:  # the flow's log keeps every line; the terminal shows the latest
        logger.info(line)
        progress.note(line)

    started = time.time()
    with progress.step("full run"):
        result = launch(parsed.require(), parsed.path, log=log, live=live, resume=resume)
    return FullTraining(result=result, started=started, ended=time.time())
