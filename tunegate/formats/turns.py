"""The source's rules on a conversation, once a format has said which turn is which.

Every format maps its records onto `Turn`s (the role a trainer gives the turn, its text, where
both are written in the record), and the same rules then apply to all of them (MISSION.md,
stage 1, and the defects that used to pass):
- at least two turns (TG202), at least one prompt turn from the user (TG261), the last turn the
  model's reply (TG204);
- no empty text (TG207); a system turn first (TG208, warning); no two replies in a row (TG209,
  warning);
- something to train: not every reply weighted 0 (TG265);
- no unfilled template placeholder such as `{{name}}` in a reply (TG266) or a prompt (TG267,
  warning); placeholders inside code (backticks, fences) are what code answers look like, not defects;
- no multimodal placeholder (`<image>`) in a record without media (TG269, warning: `tunegate.formats.other_types`).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from tunegate.formats.other_types import media_placeholder
from tunegate.formats.problem import Path, Problem, dotted

NOTHING_TRAINED = "TG265"  # training.loss_on: all waives it for a format that trains every token
_PLACEHOLDER = re.compile(r"\{\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}\}")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)


class Turn(NamedTuple):  # a NamedTuple: built for every turn of every record, so cheap to make
    """One turn of a conversation as a trainer sees it."""

    role: str | None  # system, user, assistant or tool; None when the record's role is unusable
    text: str | None  # None when the text is missing or unusable (the format has reported it)
    role_path: Path
    text_path: Path
    shown_role: str = ""  # the role as written ('human', 'gpt', ...), for messages
    trained: bool = True  # False for an assistant turn with weight 0 (or a TRL prompt)
    tool_calls: bool = False  # an assistant turn that calls tools (its text may be empty)


class Names(NamedTuple):
    """What the format calls its turn list and a turn's role and text, for messages."""

    turns: str = "messages"
    role: str = "role"
    text: str = "content"
    turn: str = "message"


def source_rules(turns: list[Turn], names: Names, list_path: Path, weighted: bool = False) -> list[Problem]:
    """Every rule of the source the turns break, in order of place."""
    out: list[Problem] = []
    if len(turns) < 2:
        out.append(Problem("TG202", "error", list_path, f"{dotted(list_path)} has {len(turns)} {names.turn}(s); a "
                           "training example needs at least a prompt and the model's reply",
                           "Add the user turn and the model's answer, or drop the record."))
    prev = ""
    for i, turn in enumerate(turns):
        out.extend(_turn_rules(i, turn, prev, names))
        prev = turn.role or ""
    if len(turns) >= 2:
        out.extend(_record_rules(turns, names, weighted))
    return out


def _turn_rules(i: int, turn: Turn, prev: str, names: Names) -> list[Problem]:
    out: list[Problem] = []
    text = turn.text
    if text is not None and (not text or text.isspace()) and not (turn.tool_calls and not text):
        what = "empty" if not text else f"only whitespace ({len(text)} chars)"
        out.append(Problem("TG207", "error", turn.text_path, f"{dotted(turn.text_path)} ({turn.shown_role!r}) is "
                           f"{what}", "Write the turn's text, or drop the record; an empty turn teaches nothing "
                           "(and an empty reply teaches the model to say nothing)."))
    if turn.role == "system" and i > 0:
        out.append(Problem("TG208", "warning", turn.role_path, f"system {names.turn} at position {i}, not first",
                           "Move the system prompt to the start; chat templates put it first or reject it."))
    if turn.role == "assistant" and prev == "assistant":
        out.append(Problem("TG209", "warning", turn.role_path, f"{names.turn}s {i - 1} and {i} are both the model's "
                           "replies", "Merge the two replies, or insert the user turn that is missing between them."))
    if text and "{{" in text:
        out.extend(_placeholders(turn))
    if text and "<" in text and (media := media_placeholder(text, turn.text_path)) is not None:
        out.append(media)
    return out


def _record_rules(turns: list[Turn], names: Names, weighted: bool) -> list[Problem]:
    out: list[Problem] = []
    roles = [t.role for t in turns]
    if "user" not in roles and None not in roles:
        out.append(Problem("TG261", "error", turns[0].role_path, f"no user turn: the {names.turns} hold only "
                           f"{', '.join(sorted({t.shown_role for t in turns}))} turns, so the reply answers nothing",
                           "Add the user's prompt before the reply, or drop the record (OpenAI's own checker "
                           "counts such records too)."))
    last = turns[-1]
    if last.role in ("user", "system", "tool"):
        out.append(ends_early(last.role_path, names.turn, last.shown_role))
    replies = [t for t in turns if t.role == "assistant"]
    if weighted and replies and not any(t.trained for t in replies):
        out.append(Problem(NOTHING_TRAINED, "error", replies[-1].role_path, "every reply of this record has weight 0, "
                           "so nothing of it is trained", "Set weight: 1 on the replies the model should learn, or "
                           "drop the record (a record with nothing trained gives a NaN or silent 0.0 loss)."))
    return out


def ends_early(role_path: Path, turn_name: str, role: str) -> Problem:
    """TG204: the last turn (a `turn_name`, from `role` as the record writes it) is not the model's reply."""
    return Problem("TG204", "error", role_path, f"the last {turn_name} is from {role!r}; a training example must "
                   "end with the model's reply", f"Append the model's answer, or drop the trailing {role!r} turn "
                   "(the model only learns from its replies).")


def _placeholders(turn: Turn) -> list[Problem]:
    found = _PLACEHOLDER.findall(_CODE.sub("", turn.text or ""))
    if not found:
        return []
    names = ", ".join(dict.fromkeys(found))
    where = dotted(turn.text_path)
    if turn.role == "assistant":
        return [Problem("TG266", "error", turn.text_path, f"{where} holds the unfilled template placeholder(s) "
                        f"{names}: the model would learn to say them", "Fill the placeholders before training "
                        "(e.g. replace {{name}} with your assistant's name); a placeholder meant as code goes in "
                        "backticks.")]
    return [Problem("TG267", "warning", turn.text_path, f"{where} holds the unfilled template placeholder(s) {names}",
                    "Fill the placeholders in the prompt too, or put one meant literally in backticks.")]
