"""The chat-record contract (MISSION.md, stage 1), one finding code per rule.

A record is `{"messages": [{"role": ..., "content": ...}, ...], ...extra keys allowed}` where
- `messages` is present (TG200) and a list (TG201) of at least two (TG202) objects (TG203);
- every message has `role` in system/user/assistant (TG205) and `content` a string (TG206) that is
  not empty or whitespace (TG207);
- the last message is the assistant's (TG204): it is the reply the model learns to write.
Warnings: a system message anywhere but first (TG208), two assistant turns in a row (TG209).

`scan` is the hot path: one pass over the messages that both checks and gathers the per-role
character counts, without raising for any shape. Only records it rejects reach `Explainer`, which
says exactly what is wrong and where.
"""
from __future__ import annotations

from typing import Any

from tunegate.dataset.json_line import locate
from tunegate.report import FindingCollector, Severity

ROLES = ("system", "user", "assistant")
# Role names from other chat formats, and what the contract calls them.
_ROLE_ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant",
                 "ai": "assistant", "chatgpt": "assistant", "developer": "system", "User": "user",
                 "Assistant": "assistant", "System": "system"}
# Keys of other dataset formats, for the TG200 hint.
_FORMATS = [("conversations", "ShareGPT ('conversations' with 'from'/'value'): rename to 'messages' "
                              "with 'role'/'content', mapping human->user and gpt->assistant"),
            ("prompt", "prompt/completion: write [{role: user, content: prompt}, "
                       "{role: assistant, content: completion}]"),
            ("instruction", "Alpaca (instruction/input/output): the user turn is instruction + input, "
                            "the assistant turn is output")]


# What `scan` concludes about a record's messages, worst first. ENDS_EARLY: the only problem is
# that the last message is not the assistant's (TG204), the commonest defect, so it skips `explain`.
BROKEN, SHAPED, ENDS_EARLY, CLEAN = 0, 1, 2, 3


def scan(msgs: Any, lengths: dict[str, list[int]]) -> int:
    """CLEAN when `msgs` meets the whole contract (warnings included); ENDS_EARLY when only the
    last turn is wrong; SHAPED when every message is an object with a string role and content but
    some other rule fails; BROKEN otherwise.

    Appends each supported message's content length to `lengths[role]` either way.
    """
    if type(msgs) is not list:
        return BROKEN
    ok, shaped, prev = True, True, ""
    for m in msgs:
        if type(m) is not dict:
            ok = shaped = False
            prev = ""
            continue
        role, content = m.get("role"), m.get("content")
        if type(role) is not str or type(content) is not str:
            ok = shaped = False
            prev = ""
            continue
        sink = lengths.get(role)
        if sink is None:
            ok, prev = False, ""
            continue
        sink.append(len(content))
        if not content or content.isspace() or (role == "system" and prev) or role == prev == "assistant":
            ok = False
        prev = role
    if ok and len(msgs) >= 2:
        return CLEAN if prev == "assistant" else ENDS_EARLY
    return SHAPED if shaped else BROKEN


class Explainer:
    """Turns a record that failed `scan` into findings with their column and fix."""

    def __init__(self, out: FindingCollector, file: str):
        self.out = out
        self.file = file

    def explain(self, raw: bytes, record: dict, line: int, index: int) -> None:
        """Report every contract problem of one record."""
        if "messages" not in record and self.out.full("TG200"):  # past the cap: count, do not explain
            self.out.count("TG200", "error")
            return

        def add(code: str, severity: Severity, path: tuple, message: str, hint: str) -> None:
            self.out.add(code, severity, message, hint, file=self.file, line=line,
                         column=self._column(code, raw, path), record=index)

        if "messages" not in record:
            add("TG200", "error", (), f"record has no 'messages' (keys: {_keys(record)})", _format_hint(record))
            return
        msgs = record["messages"]
        if type(msgs) is not list:
            add("TG201", "error", ("messages",), f"'messages' is {_kind(msgs)}, not a list",
                "Write 'messages' as a JSON array of {\"role\", \"content\"} objects.")
            return
        if len(msgs) < 2:
            add("TG202", "error", ("messages",), f"'messages' has {len(msgs)} message(s); a training "
                "example needs at least a prompt and the assistant's reply",
                "Add the user turn and the assistant's answer, or drop the record.")
        self._messages(msgs, add)
        self.last_turn(raw, msgs, line, index)

    def last_turn(self, raw: bytes, msgs: list, line: int, index: int) -> None:
        """Report TG204 when the last of two or more messages is a user or system turn."""
        last = msgs[-1] if len(msgs) >= 2 else None
        if type(last) is not dict or last.get("role") not in ("user", "system"):
            return
        where = ("messages", len(msgs) - 1, "role")
        self.out.add("TG204", "error", f"last message is from '{last['role']}'; a training example must "
                     "end with the assistant's reply", "Append the assistant's answer, or drop the trailing "
                     f"'{last['role']}' turn (the model only learns from assistant turns).",
                     file=self.file, line=line, column=self._column("TG204", raw, where), record=index)

    def _column(self, code: str, raw: bytes, path: tuple) -> int:
        # Locating a column re-scans the line: only for findings that will be shown.
        return locate(raw, path) if path and self.out.totals[code] < self.out.cap else 1

    def _messages(self, msgs: list, add: Any) -> None:
        prev = None
        for i, m in enumerate(msgs):
            where = ("messages", i)
            if type(m) is not dict:
                add("TG203", "error", where, f"message {i} is {_kind(m)}, not an object",
                    "Each message is an object like {\"role\": \"user\", \"content\": \"...\"}.")
                prev = None
                continue
            role, content = m.get("role"), m.get("content")
            if role not in ROLES:
                self._role(i, m, role, add)
            if type(content) is not str or not content or content.isspace():
                self._content(i, m, add)
            if role == "system" and i > 0:
                add("TG208", "warning", where + ("role",), f"system message at position {i}, not first",
                    "Move the system prompt to the start; chat templates put it first or reject it.")
            if role == "assistant" and prev == "assistant":
                add("TG209", "warning", where + ("role",), f"messages {i - 1} and {i} are both from the "
                    "assistant", "Merge the two replies, or insert the user turn that is missing between them.")
            prev = role

    @staticmethod
    def _role(i: int, m: dict, role: Any, add: Any) -> None:
        if "role" not in m:
            add("TG205", "error", ("messages", i), f"message {i} has no 'role' (keys: {_keys(m)})",
                "Give every message a role: system, user or assistant.")
        elif role not in ROLES:
            alias = _ROLE_ALIASES.get(role) if type(role) is str else None
            hint = (f"Use '{alias}' for '{role}'." if alias else
                    "Tool/function turns are not part of the contract: drop them or fold their result "
                    "into the text." if role in ("tool", "function", "ipython") else
                    "Use one of: system, user, assistant.")
            add("TG205", "error", ("messages", i, "role"),
                f"message {i} has role {_show(role)}; expected system, user or assistant", hint)

    @staticmethod
    def _content(i: int, m: dict, add: Any) -> None:
        content = m.get("content")
        if type(content) is str:
            if not content or content.isspace():
                what = "empty" if not content else f"only whitespace ({len(content)} chars)"
                add("TG207", "error", ("messages", i, "content"), f"message {i} ({_show(m.get('role'))}) "
                    f"content is {what}", "Write the turn's text, or drop the record; an empty turn "
                    "teaches nothing (and an empty reply teaches the model to say nothing).")
            return
        if "content" not in m:
            add("TG206", "error", ("messages", i), f"message {i} has no 'content' (keys: {_keys(m)})",
                "Give every message its text in 'content'.")
            return
        extra = (" (OpenAI content parts: join the text parts into one string)"
                 if isinstance(content, list) else "")
        add("TG206", "error", ("messages", i, "content"),
            f"message {i} content is {_kind(content)}, not a string{extra}",
            "Write 'content' as a string of the turn's text.")


def _kind(value: Any) -> str:
    return {list: "an array", dict: "an object", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), f"a number ({value!r})")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _keys(d: dict) -> str:
    names = [_show(k) for k in list(d)[:6]]
    return ", ".join(names) + (", ..." if len(d) > 6 else "") if names else "none"


def _format_hint(record: dict) -> str:
    for key, hint in _FORMATS:
        if key in record:
            return f"This looks like {hint}."
    return "Every record needs \"messages\": a list of {\"role\", \"content\"} objects."
