"""Text that is not ours (record text, keys, file names, spec values) made safe for each format.

    encodable("a\\ud800")       # 'a\\\\ud800': a lone surrogate cannot be written as UTF-8
    xml_legal("bell\\x07")      # 'bell\\\\x07': XML 1.0 has no way to carry it, not even as &#7;
    json_without_legacy_commands(text)   # GitHub's runner reads `##[error]` anywhere in a stdout line
    inert_lines("bad\\n::error::x")     # 'bad\\n\\\\x3a:error::x': a stderr line is no workflow command

A finding quotes user data; the formats CI reads must carry it as data, never as markup or a
command. Each writer escapes in its own syntax; these are the steps they share.
"""
from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters XML 1.0 forbids outright (production [2] Char): C0 controls other than tab, LF and CR,
# the surrogates, U+FFFE and U+FFFF. An escaped `&#0;` is as illegal as the raw character.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# The Actions runner falls back to its legacy command syntax `##[name props]data`, which it finds
# anywhere in a line (actions/runner, ActionCommand.TryParse), so `##[stop-commands]x` inside a
# quoted record would switch annotations off for the rest of the step.
LEGACY_COMMAND = "##["
# The runner splits a step's output into lines at CR, LF and CRLF (.NET's ReadLine).
_LINE_BREAK = re.compile("\r\n|\r|\n")
# Controls other than tab: ESC could recolour a terminal, NEL or a form feed break a line elsewhere.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_NOT_BREAKS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def encodable(text: str) -> str:
    """`text` with each lone surrogate written as its escape, so it can be encoded as UTF-8."""
    return _SURROGATE.sub(lambda m: _escape(m.group()), text)


def encodable_tree(value: Any) -> Any:
    """`encodable` applied to every string (keys too) in a JSON-shaped value."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable_tree(k): encodable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable_tree(v) for v in value]
    return value


def visible_controls(text: str) -> str:
    """`text` with every control character but tab, CR and LF (ESC, BEL, NEL, ...) as its visible escape:
    a file name's `\x1b[31m` recolours no log that shows it."""
    return _CONTROL_NOT_BREAKS.sub(lambda m: _escape(m.group()), text)


def xml_legal(text: str) -> str:
    """`text` with every character XML 1.0 cannot hold written as a visible `\\xNN` / `\\uNNNN` escape."""
    return _XML_ILLEGAL.sub(lambda m: _escape(m.group()), text)


def json_without_legacy_commands(text: str) -> str:
    """Serialised JSON with `##[` written `\\u0023#[`: the same string to a JSON parser, none to the runner."""
    return text.replace(LEGACY_COMMAND, "\\u0023#[")


def inert_lines(text: str) -> str:
    """`text` for stderr or a CI log, its lines kept, none of them a workflow command to GitHub's runner.

    The runner reads a line as a command when, its leading white space trimmed, it starts with
    `::`, or when it holds `##[` anywhere. So every line break becomes LF, a line's leading `::` is
    written `\\x3a:`, a `##[` `#\\x23[` (as `render.one_line` writes it), and any other control
    character or lone surrogate its visible escape (`\\x1b`): a person still reads the file name or
    value the message quotes, the runner reads no command in it.
    """
    lines = []
    for line in _LINE_BREAK.split(encodable(text)):
        line = _CONTROL.sub(lambda m: _escape(m.group()), line).replace(LEGACY_COMMAND, "#\\x23[")
        body = line.lstrip()
        if body.startswith("::"):
            line = line[:len(line) - len(body)] + "\\x3a" + body[1:]
        lines.append(line)
    return "\n".join(lines)
