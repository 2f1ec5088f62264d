"""Write a report where CI and people read it: stdout in the chosen format, an HTML page, GitHub's UI.

    tunegate check spec.yaml --output-format sarif > tunegate.sarif
    tunegate check spec.yaml --html report.html          # never over an input (tunegate.destination)
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
from tunegate.destination import destination, write_file
from tunegate.output.formats import FORMATS, render_as
from tunegate.output.safe import encodable, json_without_legacy_commands
from tunegate.pathguard import shown
from tunegate.report import GateReport

_written = False  # whether this process has written its report to stdout (then nothing else may follow)


def add_report_flags(p: argparse.ArgumentParser, html: bool = True) -> None:
    p.add_argument("--output-format", choices=FORMATS, metavar="FORMAT",
                   help=f"one of {', '.join(FORMATS)} (default text; --json is json): sarif for code scanning, "
                        "junit for CI test tabs, github for workflow-command annotations")
    if html:
        p.add_argument("--html", metavar="PATH", help="also write the report as one self-contained HTML page "
                                                      "(never over an input; another existing file needs --force)")
        p.add_argument("--force", action="store_true",
                       help="replace an existing file at --html PATH that is not a page tunegate wrote "
                            "(never one of this run's inputs, a folder or a device)")


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
        # every file each split was read from: one ("file"), or several in order ("files")
        read = [f for fp in report.fingerprints.values() if isinstance(fp, dict)
                for f in (fp.get("files") or [fp.get("file")])]
        write_html(report, html, __version__, [*command_inputs(args), *read], getattr(args, "force", False))
        if not getattr(args, "quiet", False):
            say(f"tunegate: report page written to {shown(html)}")


def command_inputs(args: argparse.Namespace) -> list[str]:
    """Every file the command line names to read: the spec or config, --train, --validation (each given
    once or more: a split of several files), lint's files."""
    named: list[object] = [getattr(args, "spec", None), *(getattr(args, "files", None) or [])]
    for role in ("train", "validation"):
        given = getattr(args, role, None)
        named += given if isinstance(given, list) else [given]
    return [str(p) for p in named if p]


def refuse_unsafe_outputs(args: argparse.Namespace) -> None:
    """Before any stage runs: a usage error when --html names an input, a folder, a FIFO or a device,
    or an existing file that is not a page tunegate wrote (without --force): nothing is run for nothing."""
    html = getattr(args, "html", None)
    if html:
        from tunegate.output.html import PAGE_MARKER

        destination(html, command_inputs(args), getattr(args, "force", False), PAGE_MARKER, "--html")


def write_html(report: GateReport, path: str | Path, version: str, inputs: list[str | None] | None = None,
               force: bool = False) -> None:
    """The report as an HTML page at `path`, written aside and renamed (tunegate.destination)."""
    from tunegate.output.html import PAGE_MARKER, html_page

    write_file(path, encodable(html_page(report, version)).encode("utf-8"), inputs or [], force, PAGE_MARKER,
               "--html")


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
