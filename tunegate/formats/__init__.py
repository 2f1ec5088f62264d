"""Dataset formats: every record format users hold, read as the OpenAI chat form the pipeline uses.

    from tunegate.formats import problems, to_messages
    problems(record, "sharegpt")      # the contract, in the format's own field names
    to_messages(record, "alpaca")     # the same record as {"messages": [...]}, every key kept

One conversion module for the whole pipeline: the dataset stage checks each record with
`problems`, and everything after it (overlap, fingerprints, the token audit, the mini-run and the
full run) sees the record as `to_messages` writes it, through `tunegate.dataset.records`.

Each format is one module that declares itself (`FORMAT = FormatInfo(...)`, see
`tunegate.formats.format_info`); `tunegate.formats.registry` finds them, and what is below asks
the registry, never a format by name (except the chat form every later stage reads, `CHAT`).
"""
from __future__ import annotations

from typing import Any

from tunegate.formats.format_info import CHAT, FormatInfo
from tunegate.formats.problem import Problem
from tunegate.formats.registry import (
    ADDED_KEYS, AUTO, CHOICES, FORMATS, INFO, LABELS, MODULES, PLAIN_TEXT, FileFormat, described, detect, shares_keys,
)

__all__ = ["AUTO", "CHAT", "CHOICES", "FORMATS", "LABELS", "FileFormat", "FormatInfo", "Problem", "described",
           "detect", "info", "problems", "to_messages", "canonical", "is_plain_text", "shares_keys", "added_keys",
           "completion_only"]


def info(fmt: str) -> FormatInfo:
    """What the format `fmt` declares (its label, keys, whether it trains every token)."""
    return INFO[fmt]


def problems(record: dict[str, Any], fmt: str) -> list[Problem]:
    """Every contract problem of `record` read as `fmt`."""
    return MODULES[fmt].problems(record)


def to_messages(record: dict[str, Any], fmt: str) -> dict[str, Any]:
    """`record` in OpenAI chat form (the record itself when it already is); raises on a broken record."""
    return MODULES[fmt].to_messages(record)


def canonical(record: dict[str, Any], fmt: str | None, own: str | None = "?") -> dict[str, Any]:
    """What every stage after the dataset stage sees: the chat form, or the record as read when it
    cannot be converted (the dataset stage has reported why). `own` is the record's own format
    when the caller has detected it already."""
    if fmt is None or fmt == CHAT or (detect(record) if own == "?" else own) != fmt:
        return record
    try:
        return MODULES[fmt].to_messages(record)
    except (KeyError, TypeError, ValueError, AttributeError):
        return record


def added_keys(record: dict[str, Any], fmt: str) -> int:
    """Message keys the chat form adds to a record of `fmt` (the weight 0 of a TRL prompt's replies)."""
    count = ADDED_KEYS.get(fmt)
    return count(record) if count is not None else 0


def is_plain_text(record: dict[str, Any], fmt: str | None) -> bool:
    """Whether the record trains without a chat template (TRL's plain prompt-completion)."""
    plain = PLAIN_TEXT.get(fmt) if fmt is not None else None
    return plain is not None and plain(record)


def completion_only(fmt: str | None) -> bool:
    """Whether only a record's completion is ever trained, whatever training.loss_on says."""
    return fmt is not None and not INFO[fmt].trains_every_token
