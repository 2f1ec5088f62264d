"""`gate.overlap`: the overlap stage's settings, and its defaults when the gate reads no spec.

    spec.gate.overlap             # a spec's own

A check of bare data files reads no spec and uses the defaults themselves
(tunegate.spec.overlap_defaults), which this section takes as its own.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from tunegate.spec import bounds as b
from tunegate.spec.bounds import PositiveInt, Real
from tunegate.spec.overlap_defaults import OVERLAP_DEFAULTS as D
from tunegate.spec.section import Section


class OverlapSpec(Section):
    near_duplicates: bool = Field(D.near_duplicates, description="Run the MinHash near-duplicate pass.")
    threshold: Real = Field(D.threshold, gt=0, le=1, description="Jaccard similarity above which records are near duplicates.")
    shingle_size: PositiveInt = Field(D.shingle_size, le=b.MAX_SHINGLE, description="Words per shingle for MinHash.")
    num_perm: PositiveInt = Field(D.num_perm, le=b.MAX_PERMUTATIONS, description="MinHash permutations.")
    near_duplicate_severity: Literal["error", "warning"] = Field(D.near_duplicate_severity, description="Severity of near duplicates.")
    prompt_leakage_severity: Literal["error", "warning"] = Field(D.prompt_leakage_severity, description="Severity of prompt leakage.")
    max_contaminated_share: Real = Field(
        D.max_contaminated_share, ge=0, le=1, description="Share of validation records with a near duplicate or their prompt in train "
                                      "above which the overlap stage rejects, whatever the severities (TG308).")
