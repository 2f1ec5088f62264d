"""The full run's human approval: pause the flow run for a reviewer, then hand back the answer.

Not a task: the pause belongs to the flow run (a task run held Running for a day would read as a
hung task), and the re-check of the approval after the answer is the flow's next step.
"""
from __future__ import annotations

from prefect import get_run_logger

from tunegate.events.review import ReviewOutcome, await_review, review_description
from tunegate.fullrun.approval import report_path
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.tasks.names import report_artifact_key


def request_review(parsed: ParsedSpec, approval: GateReport, report_file: str | None,
                   timeout_s: int) -> ReviewOutcome:
    """Pause until a person answers the SampleReview form (or the timeout passes); log the answer."""
    logger = get_run_logger()
    shown = str(report_file or report_path(parsed.path))
    description = review_description(parsed.path, approval, shown, report_artifact_key(parsed.path))
    logger.info(f"waiting up to {timeout_s} s for a person to review the samples (Resume in the Prefect UI)")
    outcome = await_review(description, timeout_s)
    (logger.info if outcome.approved else logger.warning)(outcome.reason)
    return outcome
