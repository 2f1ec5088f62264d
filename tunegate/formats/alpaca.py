"""Alpaca records: `{"instruction": ..., "input": ..., "output": ...}` (+ optional `system`, `history`).

The Stanford Alpaca format, as LLaMA-Factory reads it (`formatting: alpaca`): the user turn is
the instruction followed by the input on a new line, the reply is `output`, `system` is the
system turn and `history` a list of earlier `[question, answer]` pairs. tunegate renders the
resulting conversation through the model's chat template, as LLaMA-Factory does (axolotl's own
`type: alpaca` wraps it in the fixed Alpaca prompt instead; see docs/axolotl.md).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats import other_types, shape
from tunegate.formats.format_info import FormatInfo
from tunegate.formats.problem import Problem, kind
from tunegate.formats.turns import Names, Turn, source_rules

# Tried after prompt-completion: a record with both signatures is read as TRL's.
FORMAT = FormatInfo(name="alpaca", label="Alpaca ('instruction'/'output')", keys=("instruction", "output"),
                    order=2, priority=3)
NAMES = Names(turns="record", role="field", text="field", turn="field")
FIELDS = ("system", "history", "instruction", "input", "output")
_ROLE_OF = {"instruction": "the task", "output": "the reply"}


def problems(record: dict[str, Any]) -> list[Problem]:
    """Every contract problem of one Alpaca record."""
    other = other_types.not_sft(record)
    if other is not None:
        return [other]
    out: list[Problem] = []
    for key, required in (("instruction", True), ("input", False), ("output", True), ("system", False)):
        if key in record and type(record[key]) is not str and not (key in ("input", "system") and record[key] is None):
            out.append(shape.bad_text((key,), f"{kind(record[key])}, not a string", f"Write '{key}' as text."))
        elif required and key not in record:
            out.append(shape.no_field(key, f"Give every Alpaca record its '{key}' ({_ROLE_OF[key]})."))
    history = _history(record.get("history"), out)
    if out:
        return out
    return source_rules(_turns(record, history), NAMES, ())


def to_messages(record: dict[str, Any]) -> dict[str, Any]:
    """The record in OpenAI chat form; keys other than the Alpaca fields are kept."""
    messages = [{"role": "system", "content": record["system"]}] if record.get("system") else []
    for question, answer in record.get("history") or []:
        messages += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    prompt = "\n".join(t for t in (record["instruction"], record.get("input") or "") if t)
    messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": record["output"]}]
    rest = {k: v for k, v in record.items() if k not in FIELDS}
    return {"messages": messages, **rest}


def _turns(record: dict[str, Any], history: list) -> list[Turn]:
    turns = [Turn("system", record["system"], ("system",), ("system",), "system")] if record.get("system") else []
    for i, (question, answer) in enumerate(history):
        turns.append(Turn("user", question, ("history", i, 0), ("history", i, 0), "history question"))
        turns.append(Turn("assistant", answer, ("history", i, 1), ("history", i, 1), "history answer"))
    prompt = "\n".join(t for t in (record["instruction"], record.get("input") or "") if t)
    turns.append(Turn("user", prompt, ("instruction",), ("instruction",), "instruction + input"))
    turns.append(Turn("assistant", record["output"], ("output",), ("output",), "output"))
    return turns


def _history(history: Any, out: list[Problem]) -> list:
    if history is None:
        return []
    if type(history) is not list:
        out.append(shape.not_a_list("history", history, "Write history as [[\"question\", \"answer\"], ...], or "
                                    "drop it.", what="a list of [question, answer] pairs"))
        return []
    for i, pair in enumerate(history):
        if type(pair) is not list or len(pair) != 2 or not all(type(t) is str for t in pair):
            out.append(shape.not_a_turn(("history", i), pair, "Write each history entry as [\"question\", "
                                        "\"answer\"].", what="is not a [question, answer] pair of strings"))
    return history
