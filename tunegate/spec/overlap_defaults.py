"""`gate.overlap`'s defaults, the settings of a check of bare data files, without pydantic.

    OVERLAP_DEFAULTS.threshold      # 0.8: what `gate.overlap.threshold` is when a spec leaves it out

A check of bare train and validation files (`tunegate check --train ... --validation ...`) reads
no spec, so it needs these values and not the section's model (tunegate.spec.overlap_settings,
which takes its defaults from here): pydantic's import and the section's build are ~0.1 CPU s of
such a check (issue 33).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class OverlapDefaults:
    near_duplicates: bool = True
    threshold: float = 0.8
    shingle_size: int = 5
    num_perm: int = 128
    near_duplicate_severity: Literal["error", "warning"] = "warning"
    prompt_leakage_severity: Literal["error", "warning"] = "warning"
    max_contaminated_share: float = 0.05


OVERLAP_DEFAULTS = OverlapDefaults()
