"""How GitHub's Actions runner reads a line of a step's output, for tests to read ours the same way.

Modelled on actions/runner (src/Runner.Worker/ActionCommand.cs, `TryParseV2` and `TryParse`; and
ActionCommandManager.TryProcessCommand, which tries one, then the other):
- `::name k=v,k=v::data` once leading white space is trimmed; properties split on `,`, then on
  the first `=`; property values unescape %0D %0A %3A %2C %25, the data %0D %0A %25;
- the legacy `##[name k=v;k=v]data`, found ANYWHERE in the line.
The registered names are the runner's command extensions plus stop-commands.
"""
from __future__ import annotations

import re

REGISTERED = {"set-env", "set-output", "save-state", "add-mask", "add-path", "add-matcher", "remove-matcher",
              "debug", "warning", "error", "notice", "group", "endgroup", "echo", "stop-commands"}
_DATA = {"%0D": "\r", "%0A": "\n", "%25": "%"}
_PROPERTY = {**_DATA, "%3A": ":", "%2C": ","}


def _unescape(text: str, table: dict[str, str]) -> str:
    return re.sub("%0D|%0A|%3A|%2C|%25", lambda m: table.get(m.group(), m.group()), text)


def parse(line: str) -> tuple[str, dict[str, str], str] | None:
    """The command the runner reads in one output line: (name, properties, data), or None."""
    trimmed = line.lstrip()
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0:
            info = trimmed[2:end]
            name, _, props = info.partition(" ")
            if name in REGISTERED:
                properties = {}
                for part in filter(None, props.strip().split(",")):
                    key, eq, value = part.partition("=")
                    if eq and key and value:
                        properties[key] = _unescape(value, _PROPERTY)
                return name, properties, _unescape(trimmed[end + 2:], _DATA)
    start = line.find("##[")
    if start >= 0:
        close = line.find("]", start)
        name = line[start + 3:close].split(" ")[0] if close >= 0 else ""
        if name in REGISTERED:
            return name, {}, line[close + 1:]
    return None


def commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """Every command in a step's output, line by line (the runner splits on CR, LF and CRLF)."""
    return [c for c in map(parse, re.split(r"\r\n|\r|\n", output)) if c is not None]
