"""GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=TG204::message`.

GitHub turns each into an annotation on that line of the pull request's diff. Escaping follows
the runner's rules (actions/toolkit, `command.ts`): in the message `%`, CR and LF are encoded; in
property values `:` and `,` too.
"""
from __future__ import annotations

from pathlib import Path

from tunegate.output.places import file_of, relative_uri
from tunegate.render import verdict_text
from tunegate.report import GateReport

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_commands(report: GateReport, root: Path | None = None) -> str:
    """One workflow command per finding, then a notice with the verdict."""
    lines = []
    for f in report.findings:
        props = []
        path = file_of(f, report.spec)
        if path is not None:
            props.append(f"file={_property(relative_uri(path, root))}")
            if f.line is not None:
                props.append(f"line={f.line}")
                if f.column is not None:
                    props.append(f"col={f.column}")
        props.append(f"title={_property(f'{f.code} ({f.stage})')}")
        message = f.message + (f"\nfix: {f.hint}" if f.hint else "")
        lines.append(f"::{COMMANDS[f.severity]} {','.join(props)}::{_data(message)}")
    c = report.counts
    tally = f"{verdict_text(report)}: {c['error']} error(s), {c['warning']} warning(s)"
    lines.append(f"::notice title=tunegate::{_data(tally)}")
    return "\n".join(lines) + "\n"
