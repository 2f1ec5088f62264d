"""Which dataset format a record is in, from its keys alone (no guessing from text).

    detect({"conversations": [...]})          # "sharegpt"
    FileFormat("auto").of(record)              # the file's format, fixed by its first record

A file holds one format: in `auto` mode the first record whose format is known fixes it, and a
later record in another format is an error at its line (TG260), never silently read another way.
"""
from __future__ import annotations

from typing import Any, Literal

Format = Literal["messages", "sharegpt", "alpaca", "prompt_completion"]
FORMATS: tuple[Format, ...] = ("messages", "sharegpt", "alpaca", "prompt_completion")
LABELS = {"messages": "OpenAI chat ('messages')", "sharegpt": "ShareGPT ('conversations')",
          "alpaca": "Alpaca ('instruction'/'output')", "prompt_completion": "prompt-completion ('prompt'/'completion')"}
# The keys that say which format a record is in, most specific first.
_SIGNATURES: tuple[tuple[Format, tuple[str, ...]], ...] = (
    ("messages", ("messages",)), ("sharegpt", ("conversations",)),
    ("prompt_completion", ("prompt", "completion")), ("alpaca", ("instruction", "output")),
)


def shares_keys(record: dict[str, Any], fmt: str) -> bool:
    """Whether the record has some of `fmt`'s keys (an Alpaca record missing its `output`)."""
    return any(k in record for f, keys in _SIGNATURES if f == fmt for k in keys)


def detect(record: dict[str, Any]) -> Format | None:
    """The format whose keys the record has (in _SIGNATURES' order), or None."""
    # Written out: this runs once per record of every file that is not OpenAI chat.
    if "messages" in record:
        return "messages"
    if "conversations" in record:
        return "sharegpt"
    if "prompt" in record and "completion" in record:
        return "prompt_completion"
    if "instruction" in record and "output" in record:
        return "alpaca"
    return None


class FileFormat:
    """The format of one file: given, or fixed by the first record whose format is known."""

    def __init__(self, declared: str = "auto"):
        self.declared = declared
        self.format: Format | None = None if declared == "auto" else declared  # type: ignore[assignment]
        self.first_line: int | None = None

    def of(self, record: dict[str, Any], line: int = 0) -> tuple[Format | None, Format | None]:
        """(the file's format, the record's own format) once this record has been seen."""
        own = detect(record)
        if self.format is None and own is not None:
            self.format, self.first_line = own, line
        return self.format, own
