"""TRL's prompt-completion records: `{"prompt": ..., "completion": ...}`, plain text or conversational.

As TRL's SFTTrainer reads them (`completion_only_loss`, on by default for this format): the loss
is on the completion only. Plain text: prompt and completion are strings, tokenised as
`prompt + completion + EOS` with no chat template. Conversational: both are lists of OpenAI
messages; the prompt is rendered with the generation prompt, prompt + completion without, and
every token of the prompt is masked (so an assistant turn inside the prompt is context, weight 0).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats import openai_chat, other_types
from tunegate.formats.format_info import FormatInfo
from tunegate.formats.problem import Problem, kind
from tunegate.formats.turns import Names, Turn, source_rules

FORMAT = FormatInfo(name="prompt_completion", label="prompt-completion ('prompt'/'completion')",
                    keys=("prompt", "completion"), order=3, priority=2, trains_every_token=False, known_as="TRL",
                    convert_note="plain-text prompt/completion records become a user and an assistant turn, which "
                                 "trainers render through the chat template (TRL trains plain text without one)")
NAMES = Names(turns="prompt + completion", turn="message")
PLAIN_NAMES = Names(turns="record", role="field", text="field", turn="field")


def is_plain_text(record: dict[str, Any]) -> bool:
    """Whether the record trains without a chat template (TRL's plain prompt-completion)."""
    return type(record.get("prompt")) is str and type(record.get("completion")) is str


def added_keys(record: dict[str, Any]) -> int:
    """Message keys the chat form adds: the weight 0 of each reply inside a conversational prompt."""
    if type(record.get("prompt")) is not list:
        return 0
    return sum(1 for m in record["prompt"] if isinstance(m, dict) and m.get("role") == "assistant")


def problems(record: dict[str, Any]) -> list[Problem]:
    """Every contract problem of one prompt-completion record."""
    other = other_types.not_sft(record)
    if other is not None:
        return [other]
    prompt, completion = record.get("prompt"), record.get("completion")
    if is_plain_text(record):
        turns = [Turn("user", prompt, ("prompt",), ("prompt",), "prompt"),
                 Turn("assistant", completion, ("completion",), ("completion",), "completion")]
        return source_rules(turns, PLAIN_NAMES, ())
    if type(prompt) is not list or type(completion) is not list:
        return [Problem("TG270", "error", ("completion",) if type(prompt) in (str, list) else ("prompt",),
                        f"'prompt' is {kind(prompt)} and 'completion' is {kind(completion)}; they must both be text "
                        "or both be lists of messages", "Write both as strings (plain text) or both as lists of "
                        "{\"role\", \"content\"} messages (conversational).")]
    out: list[Problem] = []
    before = openai_chat.message_turns(prompt, "prompt", out)
    after = openai_chat.message_turns(completion, "completion", out, before=prompt)
    if not any(t.role == "assistant" for t in after) and after:
        out.append(Problem("TG270", "error", ("completion",), "the completion holds no assistant message, so "
                           "nothing is trained", "Put the model's reply in 'completion' as "
                           "[{\"role\": \"assistant\", \"content\": \"...\"}]."))
    context = [t._replace(trained=False) if t.role == "assistant" else t for t in before]
    out.extend(source_rules(context + after, NAMES, ("completion",), weighted=True))
    return out


def to_messages(record: dict[str, Any]) -> dict[str, Any]:
    """The record in OpenAI chat form: prompt then completion; the prompt's replies get weight 0."""
    if record.get("label") is False:
        raise ValueError("a KTO record labelled undesirable")  # the check says so (TG271)
    rest = {k: v for k, v in record.items() if k not in ("prompt", "completion")}
    if is_plain_text(record):
        messages = [{"role": "user", "content": record["prompt"]},
                    {"role": "assistant", "content": record["completion"]}]
    else:
        if any(isinstance(m, dict) and "weight" in m for m in record["prompt"]):
            raise ValueError("a prompt message has its own weight")  # TRL reads none: the check says so
        messages = [{**m, "weight": 0} if isinstance(m, dict) and m.get("role") == "assistant" else m
                    for m in record["prompt"]] + list(record["completion"])
    return {"messages": messages, **rest}
