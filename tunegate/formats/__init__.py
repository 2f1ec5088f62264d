"""Dataset formats: every record format users hold, read as the OpenAI chat form the pipeline uses.

    from tunegate.formats import problems, to_messages
    problems(record, "sharegpt")      # the contract, in the format's own field names
    to_messages(record, "alpaca")     # the same record as {"messages": [...]}, every key kept

One conversion module for the whole pipeline: the dataset stage checks each record with
`problems`, and everything after it (overlap, fingerprints, the token audit, the mini-run and the
full run) sees the record as `to_messages` writes it, through `tunegate.dataset.records`.
"""
from __future__ import annotations

from typing import Any

from tunegate.formats import alpaca, openai_chat, prompt_completion, sharegpt
from tunegate.formats.detect import FORMATS, LABELS, FileFormat, Format, detect, shares_keys
from tunegate.formats.problem import Problem

__all__ = ["FORMATS", "LABELS", "FileFormat", "Format", "Problem", "detect", "problems", "to_messages",
           "is_plain_text", "shares_keys", "added_keys"]

_MODULES = {"messages": openai_chat, "sharegpt": sharegpt, "alpaca": alpaca, "prompt_completion": prompt_completion}


def problems(record: dict[str, Any], fmt: str) -> list[Problem]:
    """Every contract problem of `record` read as `fmt`."""
    return _MODULES[fmt].problems(record)


def to_messages(record: dict[str, Any], fmt: str) -> dict[str, Any]:
    """`record` in OpenAI chat form (the record itself when it already is); raises on a broken record."""
    return record if fmt == "messages" else _MODULES[fmt].to_messages(record)


def canonical(record: dict[str, Any], fmt: str | None, own: str | None = "?") -> dict[str, Any]:
    """What every stage after the dataset stage sees: the chat form, or the record as read when it
    cannot be converted (the dataset stage has reported why). `own` is the record's own format
    when the caller has detected it already."""
    if fmt is None or fmt == "messages" or (detect(record) if own == "?" else own) != fmt:
        return record
    try:
        return _MODULES[fmt].to_messages(record)
    except (KeyError, TypeError, ValueError, AttributeError):
        return record


def added_keys(record: dict[str, Any], fmt: str) -> int:
    """Message keys the chat form adds to a record of `fmt` (the weight 0 of a TRL prompt's replies)."""
    if fmt != "prompt_completion" or type(record.get("prompt")) is not list:
        return 0
    return sum(1 for m in record["prompt"] if isinstance(m, dict) and m.get("role") == "assistant")


def is_plain_text(record: dict[str, Any], fmt: str | None) -> bool:
    """Whether the record trains without a chat template (TRL's plain prompt-completion)."""
    return fmt == "prompt_completion" and prompt_completion.is_plain(record)
