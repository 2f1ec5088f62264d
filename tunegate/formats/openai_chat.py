"""OpenAI chat records: `{"messages": [{"role": ..., "content": ...}, ...]}`, as OpenAI fine-tunes them.

What a message may be (OpenAI's chat fine-tuning format, also what TRL and axolotl's
`chat_template` read):
- `role`: system, developer (a system turn), user, assistant, or tool;
- `content`: a string, or a list of `{"type": "text", "text": ...}` parts (joined); null or
  absent only on an assistant turn that has `tool_calls`;
- `tool_calls` on an assistant turn: `[{"id", "type": "function", "function": {"name", "arguments"}}]`
  with `arguments` a JSON string (OpenAI) or an object (TRL, transformers), `id` optional (TG262);
  a `tool` turn answers a call made earlier in the record, by `tool_call_id`, else by `name`
  (TG263);
- `weight` 0 or 1 on an assistant turn (TG264; null is unset): 0 means the turn is context, not trained;
- `name`, and the reasoning keys some templates read; any other key is read by no trainer (TG268).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats import other_types, shape
from tunegate.formats.format_info import CHAT, FormatInfo
from tunegate.formats.problem import Problem, dotted, kind, show
from tunegate.formats.turns import Names, Turn, source_rules

FORMAT = FormatInfo(name=CHAT, label="OpenAI chat ('messages')", keys=("messages",), order=0, priority=0,
                    known_as="OpenAI chat")
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
KNOWN_KEYS = frozenset({"role", "content", "name", "weight", "tool_calls", "tool_call_id",
                        "reasoning_content", "thinking"})
NAMES = Names()
# Role names from other chat formats, and what this one calls them.
ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant", "ai": "assistant",
           "chatgpt": "assistant", "User": "user", "Assistant": "assistant", "System": "system"}


def problems(record: dict[str, Any]) -> list[Problem]:
    """Every contract problem of one OpenAI chat record."""
    if "messages" not in record:
        return [shape.not_in_format(record, "has no 'messages'",
                                    "Every record needs \"messages\": a list of {\"role\", \"content\"} objects.")]
    other = other_types.other_kind(record)  # preference, KTO or media beside the messages
    if other is not None:
        return [other]
    msgs = record["messages"]
    if type(msgs) is not list:
        return [shape.not_a_list("messages", msgs, "Write 'messages' as a JSON array of {\"role\", \"content\"} "
                                 "objects.")]
    out: list[Problem] = []
    turns = message_turns(msgs, "messages", out)
    out.extend(source_rules(turns, NAMES, ("messages",), weighted=True))
    return sorted(out, key=lambda p: _order(p.path))


def to_messages(record: dict[str, Any]) -> dict[str, Any]:
    """The record itself: OpenAI chat is the form every later stage reads."""
    return record


def message_turns(msgs: list, field: str, out: list[Problem], before: list | None = None) -> list[Turn]:
    """The turns of a list of OpenAI messages stored under `field`; problems go to `out`.

    `before` holds messages that precede these (a TRL prompt before its completion), whose tool
    calls a tool turn here may answer.
    """
    earlier = list(before or [])
    turns = []
    for i, m in enumerate(msgs):
        turns.append(_turn(i, m, earlier, field, out))
        earlier.append(m)
    return turns


def _order(path: tuple) -> int:
    """Problems in the order of the messages they are about (record-level ones first)."""
    return path[1] if len(path) > 1 and isinstance(path[1], int) else -1


def _turn(i: int, m: Any, earlier: list, field: str, out: list[Problem]) -> Turn:
    where = (field, i)
    if type(m) is not dict:
        out.append(shape.not_a_turn(where, m, "Each message is an object like {\"role\": \"user\", \"content\": "
                                    "\"...\"}."))
        return Turn(None, None, where, where)
    role = _role(where, m, out)
    calls = _tool_calls(where, m, role, out) if "tool_calls" in m else False
    text = _content(where, m, role, calls, out)
    if role == "tool":
        _tool_reply(where, m, earlier, out)
    trained = _weight(where, m, role, out)
    extra = [k for k in m if k not in KNOWN_KEYS]
    if extra:
        out.append(shape.unread_keys(where, extra, "Drop them, or move metadata to the record's top level (chat "
                                     "templates read only role, content, name, tool_calls, tool_call_id)."))
    return Turn(ROLES.get(role or ""), text, where + ("role",), where + ("content",), shown_role=str(role),
                trained=trained, tool_calls=bool(calls) or (role == "assistant" and "tool_calls" in m))


def _role(where: tuple, m: dict, out: list[Problem]) -> str | None:
    role = m.get("role")
    if type(role) is str and role in ROLES:
        return role
    if "role" not in m:
        out.append(shape.bad_role(where, m, "role", "Give every message a role: system, user, assistant (or tool)."))
        return None
    alias = ALIASES.get(role) if type(role) is str else None
    hint = (f"Use '{alias}' for '{role}'." if alias else
            "OpenAI's legacy function turns: put tool_calls on the assistant turn and answer each call with a "
            "'tool' turn carrying its tool_call_id." if role in ("function", "ipython") else
            "Use one of: system, developer, user, assistant, tool.")
    out.append(shape.bad_role(where, m, "role", hint, expected="; expected system, developer, user, assistant or tool"))
    return None


def _content(at: tuple, m: dict, role: str | None, calls: bool, out: list[Problem]) -> str | None:
    content = m.get("content")
    if type(content) is str:
        return content
    if content is None and (calls or ("tool_calls" in m and role == "assistant")):
        return ""  # beside tool_calls (a broken call is reported there, once)
    where = at + ("content",)
    if "content" not in m:
        hint = ("An assistant turn may leave content out only when it has tool_calls." if role == "assistant" else
                "Give every message its text in 'content'.")
        out.append(shape.no_text(at, m, "content", hint))
        return None
    if type(content) is list:
        return _parts(where, content, out)
    out.append(shape.bad_text(where, f"{kind(content)}, not a string or a list of text parts", "Write 'content' as "
                              "the turn's text (or [{\"type\": \"text\", \"text\": ...}]); null is allowed only beside "
                              "tool_calls."))
    return None


def _parts(at: tuple, parts: list, out: list[Problem]) -> str | None:
    texts = []
    for j, part in enumerate(parts):
        where = at + (j,)
        ptype = part.get("type", "text") if type(part) is dict else None
        if ptype == "text" and type(part.get("text")) is str:
            texts.append(part["text"])
            continue
        what = (f"type {show(ptype)}: tunegate checks text fine-tuning only" if type(part) is dict and ptype != "text"
                else f"{kind(part)} without a string 'text'")
        out.append(shape.bad_text(where, what, "Give every part {\"type\": \"text\", \"text\": \"...\"}, or drop the "
                                  "non-text parts."))
        return None
    return "".join(texts)


def _tool_calls(at: tuple, m: dict, role: str | None, out: list[Problem]) -> bool:
    calls, where = m["tool_calls"], at + ("tool_calls",)
    if role != "assistant":
        out.append(shape.bad_tool_call(where, f"{dotted(at)} ({show(role)}) has tool_calls; only the assistant calls "
                                       "tools", "Move the calls to the assistant turn that makes them."))
        return False
    if type(calls) is not list or not calls:
        out.append(shape.bad_tool_call(where, f"{dotted(where)} is {kind(calls) if calls != [] else 'empty'}, not a "
                                       "list of calls", "Write tool_calls as [{\"id\": ..., \"type\": \"function\", "
                                       "\"function\": {\"name\": ..., \"arguments\": \"{...}\"}}], or drop the key."))
        return False
    for j, call in enumerate(calls):
        problem = _call_problem(call)
        if problem:
            out.append(shape.bad_tool_call(where + (j,), f"{dotted(where + (j,))} {problem}", "Each call is {\"id\": "
                                           "\"call_1\", \"type\": \"function\", \"function\": {\"name\": \"...\", "
                                           "\"arguments\": \"<JSON text>\"}}."))
            return False
    return True


def _call_problem(call: Any) -> str:
    if type(call) is not dict:
        return f"is {kind(call)}, not an object"
    fn = call.get("function")
    if "id" in call and call["id"] is not None and (type(call["id"]) is not str or not call["id"]):
        return f"has id {show(call['id'])}; an id is a non-empty string (or left out)"
    if call.get("type", "function") != "function":
        return f"has type {show(call.get('type'))}; only 'function' calls are supported"
    if type(fn) is not dict or type(fn.get("name")) is not str or not fn["name"]:
        return "has no function.name"
    args = fn.get("arguments")
    if type(args) is dict:
        return ""  # TRL's and transformers' tool-use format: chat templates render the object
    if type(args) is not str:
        return f"function.arguments is {kind(args)}; the arguments are a JSON object, or one as JSON text"
    import orjson  # here, not on top: the spec stage imports the formats, and a rejected spec never needs it

    try:
        orjson.loads(args)
    except orjson.JSONDecodeError:
        return f"function.arguments {show(args)} is not valid JSON"
    return ""


def _tool_reply(at: tuple, m: dict, earlier: list, out: list[Problem]) -> None:
    """A tool reply answers a call made before it: by its tool_call_id (OpenAI), else by its name
    (TRL's tool-use format has neither call ids nor tool_call_id), else the calls before it."""
    calls = [c for prev in earlier if type(prev) is dict and type(prev.get("tool_calls")) is list
             for c in prev["tool_calls"] if type(c) is dict]
    ids = sorted({c["id"] for c in calls if type(c.get("id")) is str})
    names = sorted({c["function"]["name"] for c in calls if type(c.get("function")) is dict
                    and type(c["function"].get("name")) is str})
    wanted, name = m.get("tool_call_id"), m.get("name")
    if calls and wanted is None and (type(name) is not str or name in names):
        return
    if calls and type(wanted) is str and wanted in ids:
        return
    if not calls:
        what, key = "comes before any call (no assistant turn before it has tool_calls)", None
    elif wanted is None:
        what, key = f"is named {show(name)} but the calls so far are to {', '.join(map(show, names))}", "name"
    else:
        what = f"tool_call_id {show(wanted)} answers no call made before it (call ids so far: " \
               f"{', '.join(map(show, ids)) or 'none'})"
        key = "tool_call_id"
    out.append(Problem("TG263", "error", at + (key,) if key else at, f"tool turn {dotted(at)} {what}",
                       "Put the tool reply after the assistant turn whose tool_calls it answers, and give it that "
                       "call's id as tool_call_id (or the function's name as name)."))


def _weight(at: tuple, m: dict, role: str | None, out: list[Problem]) -> bool:
    weight = m.get("weight")
    if weight is None:
        return True  # absent, or null as `Dataset.to_json()` and pandas write a field a message lacks
    if role != "assistant":
        if weight != 0 or type(weight) is bool:  # weight 0 on a prompt says what every trainer does anyway
            out.append(shape.ignored(at + ("weight",), f"{dotted(at)} ({show(role)}) has weight {show(weight)}; only "
                                     "assistant turns are weighted, so trainers ignore it",
                                     "Drop the weight: prompts are never trained."))
        return True
    if type(weight) not in (int, float) or weight not in (0, 1):  # 0.0 and 1.0 as pandas writes them
        out.append(shape.bad_weight(at, weight, "OpenAI's format allows 0 (not trained) or 1 (trained)",
                                    "Write weight: 0 or weight: 1."))
        return True
    return weight == 1
