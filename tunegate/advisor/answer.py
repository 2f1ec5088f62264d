"""The LLM's answer: its JSON found wherever the endpoint put it, parsed into bounded suggestions.

    text = answer_text(response)                        # content, else the JSON in its reasoning
    summary, suggestions, dropped = parse_answer(text)

Reasoning models answer in several shapes: the JSON after a `<think>...</think>` block in the
content (DeepSeek-R1, Qwen3 and their distills through a plain chat template), or the content empty
and everything in `reasoning_content` (vLLM's reasoning parsers, DeepSeek's API) or `reasoning`.
The reasoning itself is never shown nor kept: only one JSON object with a `suggestions` list is
taken from it, and each suggestion is parsed into a bounded pydantic `Suggestion`.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import ValidationError

from tunegate.advisor.advice import ALLOWED_SETTINGS, Suggestion, clean_text
from tunegate.errors import AdvisorFailure
from tunegate.render import quoted

BAD_ANSWER = "TG603"
MAX_SUGGESTIONS = 12
_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_OPEN = re.compile(r"^\s*<think(?:ing)?>", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
# An object that opens with a key: where an embedded JSON answer may start (a bounded search).
_OBJECT_START = re.compile(r"\{\s*\"")
MAX_STARTS = 400
MAX_SEARCHED = 200_000  # characters at the end of a long reasoning where the answer is looked for


def answer_text(response: Any) -> str:
    """The text that holds the answer's JSON. Raises AdvisorFailure when the answer has none."""
    try:
        choice = response.choices[0]
        message = choice.message
        content = message.content or ""
    except (AttributeError, IndexError, TypeError):
        raise AdvisorFailure(BAD_ANSWER, "the advisor's answer has no message") from None
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    visible = without_thinking(content)
    if choice.finish_reason == "length":
        where = " while still reasoning" if not visible.strip() and (reasoning or content) else ""
        raise AdvisorFailure(BAD_ANSWER, f"the advisor's answer was cut off at max_tokens{where}; "
                                         "raise advisor.max_tokens")
    if visible.strip():
        return visible
    if isinstance(reasoning, str) and reasoning.strip():
        return reasoning  # the JSON is searched for in it; the reasoning itself is never shown
    if content.strip():
        raise AdvisorFailure(BAD_ANSWER, "the advisor's answer holds only its reasoning (<think>) and no "
                                         "JSON after it")
    return content


def without_thinking(content: str) -> str:
    """`content` without `<think>...</think>` blocks; '' when a block is never closed.

    A lone `</think>` (a template that opens the block in the prompt) ends the reasoning too.
    """
    text = _THINK.sub("", content)
    if _CLOSE.search(text):
        text = _CLOSE.split(text)[-1]
    return "" if _OPEN.match(text) else text


def parse_answer(text: str) -> tuple[str, list[Suggestion], list[str]]:
    """(summary, suggestions, reasons for dropped items) from the LLM's JSON text.

    Raises AdvisorFailure when the text holds no JSON object with a suggestions list.
    """
    body = _FENCE.sub("", text.strip())
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        data = _embedded(text)
        if data is None:
            raise AdvisorFailure(BAD_ANSWER, f"the advisor's answer is not JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get("suggestions"), list):
        raise AdvisorFailure(BAD_ANSWER, "the advisor's answer has no 'suggestions' list")
    kept, dropped = [], []
    for i, item in enumerate(data["suggestions"][:MAX_SUGGESTIONS]):
        try:
            kept.append(_suggestion(item))
        except (ValidationError, ValueError, TypeError) as exc:
            dropped.append(f"suggestion {i + 1}{_named(item)} dropped: {quoted(_what_failed(exc), 200)}")
    return clean_text(data.get("summary", ""), 1500), kept, dropped


def _embedded(text: str) -> dict[str, Any] | None:
    """The last JSON object with a 'suggestions' list inside prose or reasoning, or None."""
    decoder = json.JSONDecoder()
    text = text[-MAX_SEARCHED:]
    starts = [m.start() for m in _OBJECT_START.finditer(text)][-MAX_STARTS:]
    for start in reversed(starts):
        try:
            found, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict) and isinstance(found.get("suggestions"), list):
            return found
    return None


def _named(item: Any) -> str:
    """' (training.compile)' when the dropped item names an allowed setting, so the user can find it."""
    setting = item.get("setting") if isinstance(item, dict) else None
    return f" ({setting})" if isinstance(setting, str) and setting in ALLOWED_SETTINGS else ""


def _what_failed(exc: Exception) -> str:
    """The field that failed and why ('proposed: Field required'), not pydantic's message alone."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _suggestion(item: Any) -> Suggestion:
    if not isinstance(item, dict):
        raise ValueError("not an object")
    fields = ("setting", "current", "proposed", "companions", "changes_global_batch", "rationale",
              "risks", "monitor")
    data = {k: item[k] for k in fields if k in item and item[k] is not None}
    for text_key in ("rationale", "risks", "monitor"):
        if text_key in data and not isinstance(data[text_key], str):
            data[text_key] = json.dumps(data[text_key])[:800]
    claimed = item.get("expected_time_saving")  # the LLM's claim; the saving shown is ours
    if isinstance(claimed, (int, float)) and not isinstance(claimed, bool) and math.isfinite(claimed):
        data["claimed_time_saving"] = float(claimed)
    return Suggestion(source="llm", **data)
