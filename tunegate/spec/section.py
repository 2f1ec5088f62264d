"""The base of every spec section: strict, and no key it does not know.

    class LoraSpec(Section): ...

Its own module, with no section of the spec beside it: a check of bare data files builds the one
section it needs (`tunegate.spec.overlap_settings`) without the whole spec's models (~20 ms).
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    # forbid: a typo'd key must be an error, not a silently ignored setting;
    # allow_inf_nan=False: pydantic accepts NaN/Inf for floats unless told otherwise;
    # strict: `r: true` is not rank 1 and `alpha: "32"` is not 32 (an int still counts as a float).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=True, strict=True)
