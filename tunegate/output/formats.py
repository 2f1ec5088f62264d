"""`--output-format NAME`: the report rendered for a CI system (the text form is `tunegate.render`)."""
from __future__ import annotations

from pathlib import Path

from tunegate.output.safe import encodable_tree, json_without_legacy_commands
from tunegate.plain_record import json_text
from tunegate.report import GateReport

FORMATS = ("text", "json", "sarif", "junit", "github")


def render_as(report: GateReport, fmt: str, version: str, root: Path | None = None) -> str:
    """The report as `fmt` (one of FORMATS except text); paths relative to `root` (default: cwd)."""
    if fmt == "json":
        return report_json(report)
    if fmt == "sarif":
        from tunegate.output.sarif import sarif_text

        return sarif_text(report, version, root)
    if fmt == "junit":
        from tunegate.output.junit import junit_xml

        return junit_xml(report, root)
    if fmt == "github":
        from tunegate.output.github import workflow_commands

        return workflow_commands(report, root)
    raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(FORMATS)}")


def report_json(report: GateReport) -> str:
    """The report document (`--json`): what `model_dump_json` writes, and written whatever it quotes.

    A lone surrogate (a file name that is not UTF-8, a record's `"\\ud800"`) cannot be encoded as
    UTF-8: such strings are written with the surrogate as an escape instead of failing the run; and
    `##[` is written `\\u0023#[`, the same string to a JSON parser but no command to a CI runner.
    """
    data = report.model_dump(mode="json")
    text = json_text(data, indent=2)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json_text(encodable_tree(data), indent=2)
    return json_without_legacy_commands(text) + "\n"
