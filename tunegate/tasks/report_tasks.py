"""Publish what a flow run concluded: Prefect artifacts keyed per spec (and per candidate), the
findings in the flow run's log, and the approval file beside the spec."""
from __future__ import annotations

import logging
from pathlib import Path

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from tunegate.fullrun.approval import save_report
from tunegate.output import markdown_with_charts
from tunegate.render import by_severity, verdict_text
from tunegate.report import Finding, GateReport
from tunegate.sweep.candidates import candidate_key
from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.markdown import candidate_markdown, sweep_markdown
from tunegate.sweep.summary import SweepSummary
from tunegate.tasks.names import candidate_artifact_key, report_artifact_key, sweep_artifact_key

LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}


def finding_line(f: Finding) -> str:
    """A finding as one log line, as the terminal shows it: place, code, severity, message, fix."""
    return f"{f.place()} {f.code} {f.severity}: {f.message}" + (f" (fix: {f.hint})" if f.hint else "")


def log_findings(logger: logging.Logger | logging.LoggerAdapter, report: GateReport, prefix: str = "") -> None:
    for f in by_severity(report.findings):  # what blocks the run first
        logger.log(LEVELS[f.severity], prefix + finding_line(f))
    logger.info(f"{prefix}{verdict_text(report)}: {report.counts['error']} error(s), "
                f"{report.counts['warning']} warning(s)")


@task(name="publish-report")
def publish_report_task(report: GateReport, spec_path: str) -> str:
    """Save the report beside the spec, show it with its charts in the Prefect UI, log its findings."""
    log_findings(get_run_logger(), report)
    create_markdown_artifact(markdown=markdown_with_charts(report), key=report_artifact_key(spec_path),
                             description=f"tunegate preflight of {Path(spec_path).name}")
    return str(save_report(report, Path(spec_path)))


def publish_candidate(outcome: CandidateOutcome, spec_path: str) -> None:
    """A sweep candidate's artifact and findings (called inside its evaluate task)."""
    logger = get_run_logger()
    if outcome.report is not None:
        log_findings(logger, outcome.report, prefix=f"candidate {candidate_key(outcome.overrides)}: ")
    create_markdown_artifact(markdown=candidate_markdown(outcome),
                             key=candidate_artifact_key(spec_path, candidate_key(outcome.overrides)),
                             description=f"sweep candidate of {Path(spec_path).name}: {outcome.overrides}")


@task(name="publish-sweep")
def publish_sweep_task(summary: SweepSummary, spec_path: str, charts: dict[str, bytes]) -> None:
    """Show the sweep's table and its charts (validation loss per candidate, every loss curve)."""
    create_markdown_artifact(markdown=sweep_markdown(summary, Path(spec_path).name, charts),
                             key=sweep_artifact_key(spec_path),
                             description=f"tunegate sweep of {Path(spec_path).name}")
