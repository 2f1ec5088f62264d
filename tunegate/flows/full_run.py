"""The full run: launched only through the gate, tracked in MLflow, Failed on a health stop.

    tunegate launch examples/quickstart.yaml
    prefect deployment run full-run/full-run -p spec_path=/shared/specs/run.yaml
    prefect deployment run full-run/full-run -p spec_path=... -p await_review=true   # waits for a person

prefect.yaml's trigger starts it on a `tunegate.preflight.approved` event with await_review: true:
the run pauses for the SampleReview form, then checks the approval again before it trains.
"""
from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.states import Completed, Failed

from tunegate.events.review import DEFAULT_TIMEOUT_S
from tunegate.tasks.gate_tasks import parse_spec_task
from tunegate.tasks.names import flow_run_namer
from tunegate.tasks.review_tasks import request_review
from tunegate.tasks.run_tasks import tag_flow_run_task
from tunegate.tasks.tracking_tasks import close_tracking_task, log_candidate_task, open_tracking_task
from tunegate.tasks.train_tasks import full_training_task, verify_approval_task


@flow(name="full-run", flow_run_name=flow_run_namer("full-run"), log_prints=True)
def full_run(spec_path: str, report_file: str | None = None, resume: bool = False, await_review: bool = False,
             review_timeout_s: int = DEFAULT_TIMEOUT_S):
    """Train the approved spec to the end (or on from its last checkpoint), evaluate, save the adapter."""
    parsed = parse_spec_task(spec_path)
    tag_flow_run_task(parsed)
    approval = verify_approval_task(parsed, report_file)
    if await_review:  # a person confirms the samples; then the approval must still match the files
        review = request_review(parsed, approval, report_file, review_timeout_s)
        if not review.approved:
            return Failed(message=review.reason, data=review.model_dump(mode="json"))
        approval = verify_approval_task(parsed, report_file)
    session = open_tracking_task(parsed, "full-run", approval.fingerprints["validation"]["digest"],
                                 approval.fingerprints["train"]["digest"])
    training = full_training_task(parsed, session, resume)  # metrics stream to the session's run while it trains
    result = training.result
    healthy = result.status == "completed"
    log_candidate_task(session, approval, parsed, salt="full-run", name=f"full run {Path(spec_path).stem}",
                       kind="full run", trained_steps=result.global_step, **result.record_fields(),
                       train_seconds=training.ended - training.started, trained_until=training.ended,
                       **({} if healthy else {"verdict": "rejected", "reason": result.reason,
                                              "failing_codes": result.codes}))
    close_tracking_task(session, "" if healthy else f"full run {result.status}: {result.reason}")
    data = result.model_dump(mode="json")
    if not healthy:
        return Failed(message=f"full run {result.status}: {result.reason}", data=data)
    return Completed(message=f"trained; validation loss {result.val_loss}", data=data)
