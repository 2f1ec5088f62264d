"""ShareGPT records: `{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}`.

The format FastChat introduced and axolotl (`type: sharegpt`, or `chat_template` with
`field_messages: conversations`), LLaMA-Factory (`formatting: sharegpt`) and TRL
(`maybe_convert_to_chatml`) read. Roles (`from`): human and gpt, system, and the OpenAI names
user and assistant that TRL's converter passes through. LLaMA-Factory's record-level `system`
string is the system turn. Problems are named in the format's own fields
(`conversations[2].from is 'robot'`); the rules are the source's (`tunegate.formats.turns`).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats.problem import Problem, dotted, key_list, kind, show
from tunegate.formats.turns import Names, Turn, source_rules

ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}
NAMES = Names(turns="conversations", role="from", text="value", turn="turn")
_TURN_KEYS = frozenset({"from", "value"})


def problems(record: dict[str, Any]) -> list[Problem]:
    """Every contract problem of one ShareGPT record."""
    convs = record.get("conversations")
    if type(convs) is not list:
        return [Problem("TG201", "error", ("conversations",), f"'conversations' is {kind(convs)}, not a list",
                        "Write 'conversations' as an array of {\"from\": \"human\"|\"gpt\", \"value\": \"...\"}.")]
    out: list[Problem] = []
    turns = _system(record, out) + [_turn(i, t, out) for i, t in enumerate(convs)]
    out.extend(source_rules(turns, NAMES, ("conversations",)))
    return out


def to_messages(record: dict[str, Any]) -> dict[str, Any]:
    """The record in OpenAI chat form: every key kept, `from`/`value` renamed, `system` the first turn."""
    system = record.get("system")
    if system is not None and type(system) is not str:
        raise ValueError("'system' is not a string")  # the format's check reports it (TG206)
    messages = [{"role": "system", "content": system}] if system else []
    for turn in record["conversations"]:
        extra = {k: v for k, v in turn.items() if k not in _TURN_KEYS}
        messages.append({"role": ROLES[turn["from"]], "content": turn["value"], **extra})
    rest = {k: v for k, v in record.items() if k not in ("conversations", "system")}
    return {"messages": messages, **rest}


def _system(record: dict[str, Any], out: list[Problem]) -> list[Turn]:
    if "system" not in record:
        return []
    text = record["system"]
    if type(text) is not str:
        out.append(Problem("TG206", "error", ("system",), f"'system' is {kind(text)}, not a string",
                           "Write the system prompt as a string, or drop the key."))
        return []
    return [Turn("system", text, ("system",), ("system",), shown_role="system")] if text else []


def _turn(i: int, item: Any, out: list[Problem]) -> Turn:
    where = ("conversations", i)
    if type(item) is not dict:
        out.append(Problem("TG203", "error", where, f"{dotted(where)} is {kind(item)}, not an object",
                           "Each turn is an object like {\"from\": \"human\", \"value\": \"...\"}."))
        return Turn(None, None, where, where)
    role = item.get("from")
    if type(role) is not str or role not in ROLES:
        what = f"has no 'from' (keys: {key_list(item)})" if "from" not in item else f".from is {show(role)}"
        out.append(Problem("TG205", "error", where + ("from",) if "from" in item else where,
                           f"{dotted(where)}{' ' if 'from' not in item else ''}{what}",
                           "ShareGPT roles are 'human', 'gpt' and 'system' (TRL also reads 'user' and 'assistant')."))
    text = item.get("value")
    if type(text) is not str:
        what = f"has no 'value' (keys: {key_list(item)})" if "value" not in item else f".value is {kind(text)}"
        out.append(Problem("TG206", "error", where + ("value",) if "value" in item else where,
                           f"{dotted(where)}{' ' if 'value' not in item else ''}{what}, not a string",
                           "Give every turn its text in 'value'."))
        text = None
    extra = [k for k in item if k not in _TURN_KEYS]
    if extra:
        out.append(Problem("TG268", "warning", where + (extra[0],), f"{dotted(where)} has key(s) no trainer reads: "
                           f"{', '.join(map(show, extra))}", "Drop them; ShareGPT trainers read only 'from' and "
                           "'value' (axolotl reads a training flag only when the config names it)."))
    return Turn(ROLES.get(role) if type(role) is str else None, text, where + ("from",), where + ("value",),
                shown_role=str(role))
