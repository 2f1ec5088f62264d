"""The shape rules every format shares, one function per finding code, worded in the format's fields.

    not_a_list("conversations", 5, "Write 'conversations' as an array ...")   # TG201
    bad_role(("conversations", 2), {"from": "robot"}, "from", "ShareGPT roles are ...")   # TG205

Before the source's rules (`tunegate.formats.turns`) can read a record as turns, it must be
shaped like its format: in a format at all (TG200), a list of turns (TG201), each an object
(TG203) with a role (TG205) and text (TG206), well-formed tool calls (TG262) and weights (TG264),
and no key that no trainer reads (TG268, warning). Each format says these in its own field names
(`conversations[2].from`, `messages[2].role`): the wording's variable parts are the arguments, the
code and its fixed wording are here. A record's own key is quoted ('system'), a place inside it
dotted (conversations[2].value).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats.problem import Path, Problem, dotted, key_list, kind, show

NO_FORMAT = "TG200"  # the dataset stage counts it past its cap without building the message


def not_in_format(record: dict[str, Any], what: str, hint: str, after: str = "") -> Problem:
    """TG200: the record lacks its format's keys: `record {what} (keys: ...){after}`."""
    return Problem(NO_FORMAT, "error", (), f"record {what} (keys: {key_list(record)}){after}", hint)


def not_a_list(field: str, value: Any, hint: str, what: str = "a list") -> Problem:
    """TG201: the record's `field`, which holds its turns (or earlier exchanges), is not a list."""
    return Problem("TG201", "error", (field,), f"'{field}' is {kind(value)}, not {what}", hint)


def not_a_turn(where: Path, value: Any, hint: str, what: str = "") -> Problem:
    """TG203: an entry of the turn list is not a turn (by default: not an object)."""
    return Problem("TG203", "error", where, f"{dotted(where)} {what or f'is {kind(value)}, not an object'}", hint)


def bad_role(where: Path, turn: dict, key: str, hint: str, expected: str = "") -> Problem:
    """TG205: the turn has no role (its `key`), or one the format does not know (`expected` says which)."""
    if key not in turn:
        return Problem("TG205", "error", where, f"{dotted(where)} has no '{key}' (keys: {key_list(turn)})", hint)
    return Problem("TG205", "error", where + (key,), f"{dotted(where)}.{key} is {show(turn[key])}{expected}", hint)


def no_text(where: Path, turn: dict, key: str, hint: str, after: str = "") -> Problem:
    """TG206: the turn has no text (its `key`)."""
    return Problem("TG206", "error", where, f"{dotted(where)} has no '{key}' (keys: {key_list(turn)}){after}", hint)


def no_field(key: str, hint: str) -> Problem:
    """TG206: the record lacks a field that holds its text (Alpaca's instruction or output)."""
    return Problem("TG206", "error", (), f"record has no '{key}'", hint)


def bad_text(path: Path, what: str, hint: str) -> Problem:
    """TG206: the text at `path` is not text: `{path} is {what}`."""
    shown = f"'{path[0]}'" if len(path) == 1 else dotted(path)
    return Problem("TG206", "error", path, f"{shown} is {what}", hint)


def bad_tool_call(path: Path, message: str, hint: str) -> Problem:
    """TG262: a tool call the trainer cannot render (not on the assistant's turn, not a call as JSON)."""
    return Problem("TG262", "error", path, message, hint)


def bad_weight(where: Path, weight: Any, allowed: str, hint: str) -> Problem:
    """TG264: the turn's weight is not 0 or 1 (`allowed` says what the format takes)."""
    return Problem("TG264", "error", where + ("weight",), f"{dotted(where)}.weight is {show(weight)}; {allowed}", hint)


def unread_keys(where: Path, keys: list[str], hint: str) -> Problem:
    """TG268 (warning): the turn has keys no trainer reads; placed at the first of them."""
    return ignored(where + (keys[0],), f"{dotted(where)} has key(s) no trainer reads: {', '.join(map(show, keys))}",
                   hint)


def ignored(path: Path, message: str, hint: str) -> Problem:
    """TG268 (warning): something in the turn that trainers ignore (a key, a prompt's weight)."""
    return Problem("TG268", "warning", path, message, hint)
