"""`gate.overlap`: the overlap stage's settings, and its defaults when the gate reads no spec.

    OverlapSpec()                 # a check of bare data files: every default
    spec.gate.overlap             # a spec's own

Its own module so that a check of bare train and validation files (`tunegate check --train ...
--validation ...`) builds this one section, not every model of the spec (tunegate.spec.model).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from tunegate.spec import bounds as b
from tunegate.spec.bounds import PositiveInt, Real
from tunegate.spec.section import Section


class OverlapSpec(Section):
    near_duplicates: bool = Field(True, description="Run the MinHash near-duplicate pass.")
    threshold: Real = Field(0.8, gt=0, le=1, description="Jaccard similarity above which records are near duplicates.")
    shingle_size: PositiveInt = Field(5, le=b.MAX_SHINGLE, description="Words per shingle for MinHash.")
    num_perm: PositiveInt = Field(128, le=b.MAX_PERMUTATIONS, description="MinHash permutations.")
    near_duplicate_severity: Literal["error", "warning"] = Field("warning", description="Severity of near duplicates.")
    prompt_leakage_severity: Literal["error", "warning"] = Field("warning", description="Severity of prompt leakage.")
    max_contaminated_share: Real = Field(
        0.05, ge=0, le=1, description="Share of validation records with a near duplicate or their prompt in train "
                                      "above which the overlap stage rejects, whatever the severities (TG308).")
