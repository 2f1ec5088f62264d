"""A run's warnings as one MLflow tag, and back: `TG512 x22, TG511 x22, TG210 x1`.

    warnings_tag({"TG512": 22, "TG511": 22})     # "TG512 x22, TG511 x22"
    parse_warnings_tag("TG512 x22, TG511 x22")    # {"TG512": 22, "TG511": 22}

The order given is kept (the sweep puts truncation first: tunegate.sweep.warning_counts); the
total is also a metric (`gate/warnings`), a column the MLflow UI sorts.
"""
from __future__ import annotations

WARNINGS = "tunegate.warnings"


def warnings_tag(counts: dict[str, int]) -> str:
    """The counts as the tag's text ("none" when there are none)."""
    return ", ".join(f"{code} x{n}" for code, n in counts.items()) or "none"


def parse_warnings_tag(text: str | None) -> dict[str, int]:
    """The counts a tag holds ({} for a missing tag, "none" or a part that is not `CODE xN`)."""
    counts: dict[str, int] = {}
    for part in (text or "").split(","):
        code, _, n = part.strip().partition(" x")
        if code and n.isdigit():
            counts[code] = int(n)
    return counts
