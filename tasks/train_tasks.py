"""The full run's steps as Prefect tasks: verify the approval, then launch the training."""
from __future__ import annotations

from prefect import get_run_logger, task

from tunegate.full_run import approved_report, launch
from tunegate.report import GateReport


@task(name="verify-approval", tags=["tunegate"])
def verify_approval_task(spec_path: str, report_file: str | None = None) -> GateReport:
    """Refuse unless a preflight approved this exact spec and data (digests match the files now)."""
    return approved_report(spec_path, report_file)


@task(name="full-training", tags=["tunegate", "gpu"])
def full_training_task(spec_path: str):
    """Launch tunegate.train (HF Trainer + PEFT LoRA with the health callback) and wait for it."""
    logger = get_run_logger()
    return launch(spec_path, log=logger.info)
