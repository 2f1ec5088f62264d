"""Plain records: the report's types as stdlib dataclasses, pydantic only where one is read back.

    @dataclass(kw_only=True)
    class Finding(PlainRecord): ...

    finding.model_dump(mode="json")          # the dict pydantic would dump
    report.model_dump_json(indent=2)         # the document `--json` writes
    GateReport.model_validate_json(text)     # read back: validated by pydantic, imported then

A check of data files writes a report and never reads one. Building its findings, stage results,
facts and fingerprints as pydantic models cost every check process pydantic's import and model
building (0.12-0.18 CPU s, ~19 MB; issue 33), paid before the read's workers could start. As
dataclasses they cost nothing at start-up, and keep the pydantic models' small interface
(`model_dump`, `model_dump_json`, `model_copy`, `model_validate`), so a caller writes a report and a
spec the same way. Reading one back (an approval, a flow's result, a candidate's record) goes
through pydantic's `TypeAdapter`, which checks the field types, runs `__post_init__` and honours
`__pydantic_config__` (extra keys refused); a pydantic model with a record as a field validates and
serialises it as it did the model.
"""
from __future__ import annotations

import copy
import dataclasses
import enum
import json
import math
from functools import cache
from pathlib import PurePath
from typing import Any, Literal


class PlainRecord:
    """The base of the report's dataclasses: pydantic's dump, copy and validate, without pydantic."""

    # forbid: a report with a key this version does not know was not written by it (read back only).
    __pydantic_config__ = {"extra": "forbid"}

    def model_dump(self, *, mode: Literal["python", "json"] = "python", exclude: set[str] | None = None,
                   exclude_none: bool = False, exclude_defaults: bool = False) -> dict[str, Any]:
        """The record as a dict, records inside it as dicts too; JSON mode makes every value JSON's."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if exclude and f.name in exclude:
                continue
            value = getattr(self, f.name)
            if exclude_none and value is None:
                continue
            if exclude_defaults and value == _default(f):
                continue
            out[f.name] = dumped(value, mode == "json", exclude_none, exclude_defaults)
        return out

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """The record as JSON, as pydantic writes it: UTF-8 text unescaped, NaN and infinities as null."""
        return json_text(self.model_dump(mode="json"), indent)

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy with `update`'s fields replaced, not validated again (as pydantic's)."""
        new = copy.deepcopy(self) if deep else copy.copy(self)
        for name, value in (update or {}).items():
            setattr(new, name, value)
        return new

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """A record from a dict read back (a record of this class is taken as it is)."""
        if isinstance(data, cls):
            return data
        return _adapter(cls).validate_python(data)

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Any:
        return _adapter(cls).validate_json(text)


# The mutable defaults' factories are plain functions, not the builtins dict and list: pydantic reads
# a factory's signature when it builds a model (a spec section, or a parsed spec holding a stage
# result), and a builtin's is parsed from its text by the tokenizer, whose first use compiles its
# regexes (~5 ms of a 0.2 s rejection; issue 15).
def new_dict() -> dict:
    """A new empty dict (a `default_factory`)."""
    return {}


def new_list() -> list:
    """A new empty list (a `default_factory`)."""
    return []


def field_names(cls: type) -> tuple[str, ...]:
    """A record class's fields, in order."""
    return tuple(f.name for f in dataclasses.fields(cls))


def dumped(value: Any, json_mode: bool, exclude_none: bool = False, exclude_defaults: bool = False) -> Any:
    """`value` as a record's dump holds it: records as dicts; in JSON mode every value a JSON value."""
    if isinstance(value, PlainRecord):
        return value.model_dump(mode="json" if json_mode else "python", exclude_none=exclude_none,
                                exclude_defaults=exclude_defaults)
    if isinstance(value, dict):
        return {(_key(k) if json_mode else k): dumped(v, json_mode, exclude_none, exclude_defaults)
                for k, v in value.items()}
    if isinstance(value, list) or (json_mode and isinstance(value, (tuple, set, frozenset))):
        return [dumped(v, json_mode, exclude_none, exclude_defaults) for v in value]
    if not json_mode or value is None or isinstance(value, (str, int)):  # a str or int enum is written as its value
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # JSON has no NaN; pydantic writes null
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, enum.Enum):
        return dumped(value.value, json_mode)
    if hasattr(value, "model_dump"):  # a pydantic model in a stage's stats
        return value.model_dump(mode="json")
    # Anything rarer (a date, bytes, a decimal) as pydantic writes it: its import is paid only here.
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def json_text(data: Any, indent: int | None = None) -> str:
    """JSON-mode data as pydantic's `model_dump_json` lays it out (compact, or indented by `indent`)."""
    return json.dumps(data, ensure_ascii=False, allow_nan=False, indent=indent,
                      separators=(",", ":") if indent is None else (",", ": "))


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return str(key.value)
    return json.dumps(key) if isinstance(key, (bool, type(None))) else str(key)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


@cache
def _adapter(cls: type) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)
