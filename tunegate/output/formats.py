"""`--output-format NAME`: the report rendered for a CI system (the text form is `tunegate.render`)."""
from __future__ import annotations

from pathlib import Path

from tunegate.report import GateReport

FORMATS = ("text", "json", "sarif", "junit", "github")


def render_as(report: GateReport, fmt: str, version: str, root: Path | None = None) -> str:
    """The report as `fmt` (one of FORMATS except text); paths relative to `root` (default: cwd)."""
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "sarif":
        from tunegate.output.sarif import sarif_text

        return sarif_text(report, version, root)
    if fmt == "junit":
        from tunegate.output.junit import junit_xml

        return junit_xml(report)
    if fmt == "github":
        from tunegate.output.github import workflow_commands

        return workflow_commands(report, root)
    raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(FORMATS)}")
