"""The full run: launched only through the gate, tracked in MLflow, Failed on a health stop.

    tunegate launch examples/quickstart.yaml
    prefect deployment run full-run/full-run -p spec_path=/shared/specs/run.yaml
"""
from __future__ import annotations

from prefect import flow
from prefect.states import Completed, Failed

from tasks.tracking_tasks import close_tracking_task, log_candidate_task, open_tracking_task
from tasks.train_tasks import full_training_task, verify_approval_task


@flow(name="full-run", log_prints=True)
def full_run(spec_path: str, report_file: str | None = None):
    """Train the approved spec to the end, evaluate on the frozen validation set, save the adapter."""
    approval = verify_approval_task(spec_path, report_file)
    session = open_tracking_task(spec_path, "full-run", approval.fingerprints["validation"]["digest"])
    result = full_training_task(spec_path)
    healthy = result.status == "completed"
    log_candidate_task(session, approval, spec_path, salt="full-run", name="full-run",
                       train_steps=[{"step": s.step, "loss": s.loss, "grad_norm": s.grad_norm} for s in result.steps],
                       final_train_loss=result.final_train_loss, val_loss=result.val_loss,
                       **({} if healthy else {"verdict": "rejected", "reason": result.reason,
                                              "failing_codes": result.health_codes}))
    close_tracking_task(session, "" if healthy else f"full run {result.status}: {result.reason}")
    data = result.model_dump(mode="json")
    if not healthy:
        return Failed(message=f"full run {result.status}: {result.reason}", data=data)
    return Completed(message=f"trained; validation loss {result.val_loss}", data=data)
