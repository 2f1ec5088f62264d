"""One contract problem of one record, said in the record's own field names.

A format module turns a record into `Problem`s; the dataset stage turns each into a `Finding`,
locating `path` (object keys and array indexes, as written in the record) to a column. The same
rule has the same code in every format (TG204 "the last turn is not the model's" is
`messages[3].role` in OpenAI chat and `conversations[3].from` in ShareGPT).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # a type only: reading records needs neither the report's models nor pydantic
    from tunegate.report import Severity

Path = tuple[Any, ...]


class Problem(NamedTuple):
    """A rule a record breaks: the code, how bad, where (a path into the record), what, the fix."""

    code: str
    severity: Severity
    path: Path
    message: str
    hint: str


def dotted(path: Path) -> str:
    """`conversations[2].from` for ("conversations", 2, "from")."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "the record"


def kind(value: Any) -> str:
    """What a JSON value is, for a message."""
    if isinstance(value, bytes):  # a parquet binary value that is not UTF-8 text (tunegate.dataset.parquet_rows)
        return f"binary data ({len(value)} bytes, not UTF-8 text)"
    return {list: "an array", dict: "an object", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), f"a number ({value!r})")


def show(value: Any) -> str:
    """A short repr of a value (never a whole text)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def key_list(d: dict) -> str:
    """The first keys of an object, for a message."""
    names = [show(k) for k in list(d)[:6]]
    return ", ".join(names) + (", ..." if len(d) > 6 else "") if names else "none"
