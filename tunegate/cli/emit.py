"""Write a report where CI and people read it: stdout in the chosen format, an HTML page, GitHub's UI.

    tunegate check spec.yaml --output-format sarif > tunegate.sarif
    tunegate check spec.yaml --html report.html
    GITHUB_ACTIONS=true tunegate check spec.yaml     # the text report, plus an annotation per finding

Under GitHub Actions (GITHUB_ACTIONS=true) the text form is followed by workflow commands, so each
finding is annotated on its line without any flag, and the Markdown report is appended to the
job summary ($GITHUB_STEP_SUMMARY). A machine format (json, sarif, junit) is never mixed with them.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from tunegate.cli.streams import say
from tunegate.errors import UsageError
from tunegate.output.formats import FORMATS, render_as
from tunegate.output.safe import json_without_legacy_commands
from tunegate.report import GateReport

_written = False  # whether this process has written its report to stdout (then nothing else may follow)


def add_report_flags(p: argparse.ArgumentParser, html: bool = True) -> None:
    p.add_argument("--output-format", choices=FORMATS, metavar="FORMAT",
                   help=f"one of {', '.join(FORMATS)} (default text; --json is json): sarif for code scanning, "
                        "junit for CI test tabs, github for workflow-command annotations")
    if html:
        p.add_argument("--html", metavar="PATH", help="also write the report as one self-contained HTML page")


def chosen_format(args: argparse.Namespace) -> str:
    fmt = getattr(args, "output_format", None)
    if getattr(args, "json", False):
        if fmt not in (None, "json"):
            raise UsageError(f"--json and --output-format {fmt} ask for two formats on stdout; give one")
        return "json"
    return fmt or "text"


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def emit_report(report: GateReport, args: argparse.Namespace, text: Callable[[], str],
                json_text: Callable[[], str] | None = None) -> None:
    """Print the report in the chosen format; add the HTML page and GitHub's annotations when asked."""
    from tunegate import __version__

    global _written
    fmt = chosen_format(args)
    if fmt == "text":
        sys.stdout.write(text())
    elif fmt == "json" and json_text is not None:
        sys.stdout.write(json_without_legacy_commands(json_text()))
    else:
        sys.stdout.write(render_as(report, fmt, __version__))
    _written = True
    if in_github_actions():
        if fmt == "text":
            from tunegate.output.github import workflow_commands

            sys.stdout.write(workflow_commands(report))
        _job_summary(report)
    html = getattr(args, "html", None)
    if html:
        write_html(report, Path(html), __version__)
        if not getattr(args, "quiet", False):
            say(f"tunegate: report page written to {html}")


def write_html(report: GateReport, path: Path, version: str) -> None:
    from tunegate.output.html import html_page

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html_page(report, version), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the HTML report to {path}: {exc.strerror or exc}") from None


def _job_summary(report: GateReport) -> None:
    """Append the Markdown report to the job's summary page, when the runner offers one."""
    from tunegate.render import markdown

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    try:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown(report) + "\n")
    except OSError:  # the summary is a courtesy; the annotations and exit code already carry the verdict
        pass


def emit_failure(args: argparse.Namespace, exit_code: int, message: str) -> None:
    """After an error that left no report: a document in the chosen machine format that says so.

    Nothing when the report is already out (stdout stays one document), for the text form (stderr
    has the message), and when the flags themselves ask for two formats.
    """
    from tunegate import __version__
    from tunegate.output.failure import failure_text

    if _written or not hasattr(args, "output_format"):
        return
    try:
        fmt = chosen_format(args)
    except UsageError:
        return
    if fmt != "text":
        sys.stdout.write(failure_text(fmt, exit_code, message, __version__))
