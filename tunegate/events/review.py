"""The person in the loop: a triggered full run pauses until someone says they reviewed the samples.

The form is Prefect's: `pause_flow_run(wait_for_input=SampleReview...)` stores the model's JSON
Schema and the description with the flow run, the UI shows both behind the paused run's "Resume"
button, and `POST /api/flow_runs/<id>/resume {"run_input": {...}}` answers it without the UI.
"""
from __future__ import annotations

from pathlib import Path

from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput
from pydantic import BaseModel, Field

from tunegate.dataset.fingerprint import short_digest
from tunegate.report import GateReport

DEFAULT_TIMEOUT_S = 24 * 3600  # a person answers within a working day; past it the run ends untrained


class SampleReview(RunInput):
    """What the reviewer answers before the full run may train (RunInput forbids extra keys)."""

    reviewed_samples: bool = Field(default=False, description="I reviewed the samples")
    reviewer: str = Field(default="", max_length=200, description="who reviewed them (name or handle)")
    note: str = Field(default="", max_length=2000, description="anything the team should know (optional)")


class ReviewOutcome(BaseModel):
    """The answer (or its absence) as the flow records it; `reason` says why a run did not train."""

    approved: bool
    reason: str
    review: SampleReview | None = None


def review_description(spec_path: str, approval: GateReport, report_file: str, artifact_key: str) -> str:
    """The Markdown the UI shows above the form: what was approved, and where to look before answering."""
    prints = approval.fingerprints
    rows = [f"| {role} | `{Path(prints[role].get('file') or '?').name}` | {prints[role].get('records', '?')} | "
            f"`{short_digest(prints[role]['digest'], 16)}…` |" for role in ("train", "validation") if role in prints]
    return "\n".join([
        f"## Review before the full run of `{Path(spec_path).name}`",
        "",
        f"The preflight approved this spec. Read its report (`{report_file}`, also the Prefect artifact "
        f"`{artifact_key}`) and look at the training samples as the model will see them:",
        "",
        f"    tunegate samples {spec_path}",
        "",
        "| split | file | records | digest |", "|---|---|---|---|", *rows,
        "",
        "Tick **I reviewed the samples** to train. Leaving it unticked refuses the run. If the spec or the "
        "data change meanwhile, the approval is stale and the run is refused after you answer.",
    ])


def await_review(description: str, timeout_s: int = DEFAULT_TIMEOUT_S, poll_s: int = 5) -> ReviewOutcome:
    """Pause the current flow run for the reviewer's answer; a refusal or no answer in time is not approved."""
    from prefect.exceptions import FlowPauseTimeout

    try:
        review = pause_flow_run(wait_for_input=SampleReview.with_initial_data(description=description),
                                timeout=timeout_s, poll_interval=poll_s)
    except FlowPauseTimeout:
        return ReviewOutcome(approved=False, reason=f"no review within {timeout_s} s: the full run did not train")
    who = review.reviewer or "the reviewer"
    if not review.reviewed_samples:
        why = f": {review.note}" if review.note else ""
        return ReviewOutcome(approved=False, review=review,
                             reason=f"{who} did not confirm reviewing the samples{why}; the full run did not train")
    return ReviewOutcome(approved=True, review=review, reason=f"samples reviewed by {who}")
