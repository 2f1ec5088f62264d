"""pydantic's validation errors on a spec as findings: the code, the key's place, and the fix.

    add_validation_error(out, err, located, "spec.yaml")   # each of ValidationError.errors()

The codes of a spec's own keys are produced here; the config importers say a tool's key has the
wrong type (WRONG_TYPE) or value (OUT_OF_RANGE) with the same codes, and `translate` and the sweep
test for MISSING_KEY and UNKNOWN_KEY.
"""
from __future__ import annotations

import difflib
import math
from typing import Any

from pydantic import BaseModel

from tunegate.report import FindingCollector
from tunegate.spec.bounds import SUBNORMAL
from tunegate.spec.model import Spec
from tunegate.spec.yaml_loader import Located

UNKNOWN_KEY, WRONG_TYPE, OUT_OF_RANGE, MISSING_KEY, NOT_FINITE = "TG101", "TG102", "TG103", "TG104", "TG107"
# pydantic error type -> our code; every type not listed is a plain wrong-type error (WRONG_TYPE).
_CODES = {
    "extra_forbidden": UNKNOWN_KEY,
    "missing": MISSING_KEY,
    "greater_than": OUT_OF_RANGE, "greater_than_equal": OUT_OF_RANGE,
    "less_than": OUT_OF_RANGE, "less_than_equal": OUT_OF_RANGE,
    "finite_number": NOT_FINITE,
    SUBNORMAL: OUT_OF_RANGE,  # tunegate.spec.bounds: 1e-320 is as unusable as a negative count
}
_SHOWN_CHARS = 60  # a value quoted in a message: 10**4000 is said by its size, not its 4,001 digits


def add_validation_error(out: FindingCollector, err: dict[str, Any], located: Located, where: str) -> None:
    """One of pydantic's errors as a finding at its key's place, with the fix."""
    loc = [str(p) for p in err["loc"]]
    key = ".".join(loc)
    line, col = located.place(key) or (None, None)
    code = _CODES.get(err["type"], WRONG_TYPE)
    value = err.get("input")
    if code == UNKNOWN_KEY:
        parent, name = loc[:-1], loc[-1]
        allowed = sorted(_fields_at(parent))
        close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
        section = ".".join(parent) or "the top level"
        hint = (f"Did you mean '{close[0]}'? " if close else "") + f"Keys allowed in {section}: {', '.join(allowed)}."
        out.add(code, "error", f"unknown key '{key}'", hint, file=where, line=line, column=col, key=key)
        return
    if code == MISSING_KEY:
        out.add(code, "error", f"required key '{key}' is missing", _missing_hint(loc, key),
                file=where, line=line, column=col, key=key)
        return
    if code == NOT_FINITE or (isinstance(value, float) and not math.isfinite(value)):
        code = NOT_FINITE
        msg = f"{key} must be a finite number, got {_shown(value)}"
    elif code == WRONG_TYPE and _past_floats(value):  # 10**4000 where a float belongs: a range, not a type
        code = OUT_OF_RANGE
        msg = f"{key}: input should be a number a float can hold (below 1.8e308), got {_shown(value)}"
    else:
        msg = f"{key}: {err['msg'].lower()}, got {_shown(value)}"
    hint = _strict_hint(err["type"], key, value) or _fix(loc, key)
    out.add(code, "error", msg, hint, file=where, line=line, column=col, key=key)


_NUMBER_TYPES = {"int_type", "float_type", "int_from_float"}


def _past_floats(value: Any) -> bool:
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _shown(value: Any) -> str:
    """`value` as the message quotes it: whole when short, else its start and its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        digits = len(str(abs(value))) if value.bit_length() < 14000 else int(value.bit_length() * math.log10(2)) + 1
        return f"an integer of {digits:,} digits"
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}… ({len(text):,} characters)"


def _strict_hint(kind: str, key: str, value: Any) -> str | None:
    """The fix for a value of the wrong type that lax parsing would have coerced silently."""
    if kind in _NUMBER_TYPES and isinstance(value, bool):
        return (f"{key} is a number; '{str(value).lower()}' is a boolean and is not read as "
                f"{int(value)}. Write the number.")
    if kind in _NUMBER_TYPES and isinstance(value, str) and _is_number(value):
        return f"Write the number without quotes ({key.rsplit('.', 1)[-1]}: {value.strip()}): a quoted value is text."
    if kind == "bool_type" and isinstance(value, (str, int)):
        return f"Write {key} as true or false, without quotes."
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _model_at(path: list[str]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Spec
    for name in path:
        field = model.model_fields.get(name) if model else None
        ann = getattr(field, "annotation", None)
        # an optional section (`RankExponentRange | None`, the sweep space's variables) is its model
        ann = next((a for a in getattr(ann, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)), ann)
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return model


def _fields_at(path: list[str]) -> list[str]:
    model = _model_at(path)
    return list(model.model_fields) if model else []


def _missing_hint(loc: list[str], key: str) -> str:
    """What to add: a section with the keys it needs, or a key with what it holds."""
    section = _model_at(loc)
    if section is not None:
        fields = section.model_fields
        needed = [n for n, f in fields.items() if f.is_required()]
        optional = [n for n, f in fields.items() if not f.is_required()]
        keys = ", ".join(needed) + (f" (and optionally {', '.join(optional)})" if optional else "") if needed \
            else ", ".join(optional)
        return f"Add the '{key}' section with {keys}; `tunegate schema` lists every key."
    description = _description(loc)
    return f"Add '{key}'" + (f" ({description})." if description else "; `tunegate schema` says what it holds.")


def _description(loc: list[str]) -> str:
    model = _model_at(loc[:-1])
    field = model.model_fields.get(loc[-1]) if model else None
    return (field.description or "").rstrip(".") if field else ""


def _fix(loc: list[str], key: str) -> str:
    model = _model_at(loc[:-1])
    field = model.model_fields.get(loc[-1]) if model else None
    if field is None:
        return "See `tunegate schema` for the allowed values."
    default = field.get_default(call_default_factory=True)
    example = f", e.g. {default!r}" if default is not None and not isinstance(default, BaseModel) else ""
    return f"Set {key} to a valid value{example} ({(field.description or '').rstrip('.')})."
