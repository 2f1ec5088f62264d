"""GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=TG204::message`.

GitHub turns each into an annotation on that line of the pull request's diff. Escaping is the
toolkit's (actions/toolkit, packages/core/src/command.ts, `escapeData` and `escapeProperty`): in
the message `%`, CR and LF are encoded; in property values `:` and `,` too. So no quoted value can
end its field or start a line of its own (the runner reads a command per line, and a property
ends at `,` or `::`). A file is named by its path from the checkout's root (not a URI: the runner
decodes nothing but those five escapes); a finding without a line names its file alone.
"""
from __future__ import annotations

from pathlib import Path

from tunegate.output.places import file_of, repo_path
from tunegate.output.safe import encodable, visible_controls
from tunegate.render import verdict_text
from tunegate.report import GateReport

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """A command's message, as `escapeData` writes it (a lone surrogate first made encodable, any other
    control character shown as its escape: GitHub's log would colour the line at an ESC)."""
    return visible_controls(encodable(text)).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property's value, as `escapeProperty` writes it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: object) -> str:
    """`::name k=v,k=v::message`; properties without a value are left out, as the toolkit does."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v not in (None, ""))
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def workflow_commands(report: GateReport, root: Path | None = None) -> str:
    """One workflow command per finding, then a notice with the verdict."""
    lines = []
    for f in report.findings:
        path = file_of(f, report.spec)
        line = f.line if path is not None else None
        col = f.column if line is not None else None
        message = f.message + (f"\nfix: {f.hint}" if f.hint else "")
        lines.append(command(COMMANDS[f.severity], message, file=repo_path(path, root) if path else None,
                             line=line, col=col, title=f"{f.code} ({f.stage})"))
    c = report.counts
    tally = f"{verdict_text(report)}: {c['error']} error(s), {c['warning']} warning(s)"
    lines.append(command("notice", tally, title="tunegate"))
    return "\n".join(lines) + "\n"
