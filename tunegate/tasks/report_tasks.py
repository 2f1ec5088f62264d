"""Publish a gate report: a Prefect markdown artifact and the approval file beside the spec."""
from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact

from tunegate.fullrun.approval import save_report
from tunegate.render import markdown
from tunegate.report import GateReport


@task(name="publish-report", tags=["tunegate"])
def publish_report_task(report: GateReport, spec_path: str) -> str:
    """Save the report beside the spec and show it in the Prefect UI; return the saved path."""
    create_markdown_artifact(markdown=markdown(report), key="tunegate-report",
                             description=f"tunegate preflight of {Path(spec_path).name}")
    return str(save_report(report, Path(spec_path)))
