"""What the LLM says, held against what we computed: its figures, its `current` values.

The LLM's prose is untrusted. It is shown only as its words, and a figure in it (hours, a
percentage, GiB, a speed-up factor) stays only when it is one of ours; any other is replaced by
FLAG, so "120 h -> about 75 h" never reads as a prediction beside our "335.8 -> 268.6 h". A
suggestion whose `current` value is not the spec's was made for another config and is dropped.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tunegate.spec.model import Spec

FLAG = "[figure not ours]"
# A number with a unit we can check: hours, percent, memory, a factor ("2x").
_FIGURE = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(hours?|hrs?|h|%|percent|GiB|GB|x|×)(?![A-Za-z])")
_KINDS = {"h": "hours", "hr": "hours", "hrs": "hours", "hour": "hours", "hours": "hours", "%": "percent",
          "percent": "percent", "gib": "memory", "gb": "memory", "x": "factor", "×": "factor"}
# Within this of one of our figures, the LLM quotes us (ours are rounded to 4 digits, its to fewer).
_REL, _ABS = 0.02, {"hours": 0.05, "percent": 1.0, "memory": 0.1}


def keep_our_figures(text: str, ours: dict[str, Iterable[float]]) -> tuple[str, int]:
    """`text` with every figure that is not one of `ours` (by kind) replaced by FLAG; and how many."""
    known = {kind: [v for v in values if v is not None and math.isfinite(v)] for kind, values in ours.items()}
    removed = 0

    def check(match: re.Match[str]) -> str:
        nonlocal removed
        kind = _KINDS[match.group(2).lower()]
        value = float(match.group(1).replace(",", ""))
        if any(_close(value, mine, kind) for mine in known.get(kind, ())):
            return match.group(0)
        removed += 1
        return FLAG

    return _FIGURE.sub(check, text), removed


def _close(value: float, mine: float, kind: str) -> bool:
    return abs(value - mine) <= max(_ABS.get(kind, 0.0), _REL * abs(mine))


def spec_value(spec: Spec, setting: str) -> Any:
    """The spec's value of a dotted setting (`training.micro_batch_size` -> 4)."""
    section, _, field = setting.partition(".")
    return getattr(getattr(spec, section), field)


def same_value(claimed: Any, actual: Any) -> bool:
    """Whether the LLM's `current` is the spec's value (2 == 2.0; 'SDPA' == 'sdpa'; True is not 1)."""
    if isinstance(claimed, bool) or isinstance(actual, bool):
        return isinstance(claimed, bool) and isinstance(actual, bool) and claimed == actual
    if isinstance(claimed, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(float(claimed), float(actual), rel_tol=1e-6)
    if isinstance(claimed, list) and isinstance(actual, list):
        return sorted(map(str, claimed)) == sorted(map(str, actual))
    if isinstance(claimed, str) and isinstance(actual, (str, Path)):
        return claimed.strip().lower() == str(actual).lower()
    return claimed == actual
