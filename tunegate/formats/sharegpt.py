"""ShareGPT records: `{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}`.

The format FastChat introduced and axolotl (`type: sharegpt`, or `chat_template` with
`field_messages: conversations`), LLaMA-Factory (`formatting: sharegpt`) and TRL
(`maybe_convert_to_chatml`) read. Roles (`from`): human and gpt, system, tool (Hermes function
calling; axolotl's default role map), the OpenAI names user and assistant that TRL's converter
passes through, and LLaMA-Factory's function_call (the call as JSON, written as `tool_calls`)
and observation (the tool's reply). LLaMA-Factory's record-level `system` string is the system
turn; a turn's `weight` (null, 0 or 1: OpenHermes, SlimOrca) is read as OpenAI chat's. Problems are named in the format's own fields
(`conversations[2].from is 'robot'`); the rules are the source's (`tunegate.formats.turns`).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats import other_types, shape
from tunegate.formats.format_info import FormatInfo
from tunegate.formats.problem import Problem, dotted, kind, show
from tunegate.formats.turns import Names, Turn, source_rules

FORMAT = FormatInfo(name="sharegpt", label="ShareGPT ('conversations')", keys=("conversations",),
                    order=1, priority=1)
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
         "tool": "tool", "observation": "tool", "function_call": "assistant"}
NAMES = Names(turns="conversations", role="from", text="value", turn="turn")
_TURN_KEYS = frozenset({"from", "value", "weight"})
_SHOWN_ROLES = "'human', 'gpt', 'system', 'tool' (and 'user', 'assistant'; LLaMA-Factory's 'function_call', 'observation')"


def problems(record: dict[str, Any]) -> list[Problem]:
    """Every contract problem of one ShareGPT record."""
    other = other_types.other_kind(record)  # preference, KTO or media beside the conversation
    if other is not None:
        return [other]
    convs = record.get("conversations")
    if type(convs) is not list:
        return [shape.not_a_list("conversations", convs, "Write 'conversations' as an array of {\"from\": "
                                 "\"human\"|\"gpt\", \"value\": \"...\"}.")]
    out: list[Problem] = []
    turns = _system(record, out) + [_turn(i, t, out) for i, t in enumerate(convs)]
    out.extend(source_rules(turns, NAMES, ("conversations",), weighted=True))
    return out


def to_messages(record: dict[str, Any]) -> dict[str, Any]:
    """The record in OpenAI chat form: every key kept, `from`/`value` renamed, `system` the first turn."""
    system = record.get("system")
    if system is not None and type(system) is not str:
        raise ValueError("'system' is not a string")  # the format's check reports it (TG206)
    messages = [{"role": "system", "content": system}] if system else []
    for turn in record["conversations"]:
        extra = {k: v for k, v in turn.items() if k not in _TURN_KEYS}
        role = ROLES[turn["from"]]
        if role == "assistant" and turn.get("weight") is not None:
            extra["weight"] = int(turn["weight"])  # 0.0 / 1.0 as SlimOrca writes them; a prompt's weight is moot
        if turn["from"] == "function_call":
            messages.append({"role": "assistant", "content": None, "tool_calls": _calls(turn["value"]), **extra})
        else:
            messages.append({"role": role, "content": turn["value"], **extra})
    rest = {k: v for k, v in record.items() if k not in ("conversations", "system")}
    return {"messages": messages, **rest}


def _system(record: dict[str, Any], out: list[Problem]) -> list[Turn]:
    if "system" not in record:
        return []
    text = record["system"]
    if type(text) is not str:
        out.append(shape.bad_text(("system",), f"{kind(text)}, not a string",
                                  "Write the system prompt as a string, or drop the key."))
        return []
    return [Turn("system", text, ("system",), ("system",), shown_role="system")] if text else []


def _turn(i: int, item: Any, out: list[Problem]) -> Turn:
    where = ("conversations", i)
    if type(item) is not dict:
        out.append(shape.not_a_turn(where, item, "Each turn is an object like {\"from\": \"human\", \"value\": "
                                    "\"...\"}."))
        return Turn(None, None, where, where)
    role = item.get("from")
    if type(role) is not str or role not in ROLES:
        out.append(shape.bad_role(where, item, "from", f"ShareGPT roles are {_SHOWN_ROLES}."))
    text = item.get("value")
    if type(text) is not str:
        hint = "Give every turn its text in 'value'."
        out.append(shape.no_text(where, item, "value", hint, after=", not a string") if "value" not in item
                   else shape.bad_text(where + ("value",), f"{kind(text)}, not a string", hint))
        text = None
    trained = _weight(where, item, out)
    calls = role == "function_call" and type(text) is str and _call_ok(where, text, out)
    extra = [k for k in item if k not in _TURN_KEYS]
    if extra:
        out.append(shape.unread_keys(where, extra, "Drop them; ShareGPT trainers read only 'from' and 'value' "
                                     "(axolotl reads a training flag only when the config names it)."))
    return Turn(ROLES.get(role) if type(role) is str else None, text, where + ("from",), where + ("value",),
                shown_role=str(role), trained=trained, tool_calls=calls)


def _weight(where: tuple, item: dict, out: list[Problem]) -> bool:
    """Whether the turn is trained by its `weight` (OpenHermes writes null, SlimOrca 0.0 and 1.0):
    tunegate masks a reply of weight 0, as it does an OpenAI chat one."""
    weight = item.get("weight")
    if weight is None:
        return True
    if type(weight) not in (int, float) or weight not in (0, 1):
        out.append(shape.bad_weight(where, weight, "a turn's weight is 0 (not trained), 1 (trained) or null",
                                    "Write weight: 0 or 1, or drop it."))
        return True
    return weight == 1


def _calls(value: str) -> list[dict[str, Any]]:
    """LLaMA-Factory's function_call value (one {"name", "arguments"} or a list of them) as OpenAI tool_calls."""
    import orjson  # here, not on top: the spec stage imports the formats, and a rejected spec never needs it

    found = orjson.loads(value)
    return [{"type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", {})}}
            for c in (found if type(found) is list else [found])]


def _call_ok(where: tuple, value: str, out: list[Problem]) -> bool:
    """Whether a function_call turn's value is the call as JSON (else reported, TG262)."""
    import orjson

    try:
        found = orjson.loads(value)
    except orjson.JSONDecodeError:
        found = None
    calls = found if type(found) is list and found else [found]
    if all(type(c) is dict and type(c.get("name")) is str and c["name"] and
           type(c.get("arguments", {})) in (dict, str) for c in calls):
        return True
    out.append(shape.bad_tool_call(where + ("value",), f"{dotted(where)} is a function_call whose value "
                                   f"{show(value)} is not a call as JSON", "Write the call as JSON text: "
                                   "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}} (a list of "
                                   "them for parallel calls), as LLaMA-Factory reads it."))
    return False
