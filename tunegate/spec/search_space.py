"""The NOMAD search space of a sweep (`sweep.space`), and the map between its points and overrides.

    sweep:
      strategy: nomad
      space:
        log10_learning_rate: {lower: -5, upper: -3, start: -4}   # learning rate 1e-5 .. 1e-3
        lora_rank_exp: {lower: 2, upper: 6, start: 4}            # r = 2**k: 4 .. 64
        alpha_multiple: {lower: 0.5, upper: 4, start: 2}         # alpha = multiple * r
        dropout: {lower: 0, upper: 0.3, start: 0.05}

NOMAD kills the Python process (a segfault, not an exception) when a start point lies outside its
bounds, is not integral for an integer variable, or when a lower bound equals its upper bound.
Every one of those is rejected here, by pydantic, before NOMAD is called.
No heavy import here: the spec stage imports this module.
"""
# Annotations are real types here, not `from __future__ import annotations` strings: pydantic
# would compile and evaluate each field's type from its text when the models are built, at every
# start-up (~2 % of a rejection's instructions over the report, facts and spec models; issue 15).

import math
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tunegate.errors import SpaceError


class _Range(BaseModel):
    # strict, as every spec section: `lower: "-5"` is text and `lower: true` is not 1.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    # The variable's physical domain: bounds outside it make no valid spec (dropout 1, rank 2**-1).
    domain: ClassVar[tuple[float, float]] = (-math.inf, math.inf)
    integer: ClassVar[bool] = False

    @model_validator(mode="after")
    def _ordered(self) -> "_Range":
        lo, hi = self.domain
        lower, upper, start = self.lower, self.upper, self.start  # type: ignore[attr-defined]
        if not lower < upper:
            raise ValueError(f"lower ({lower}) must be below upper ({upper}); to keep a value fixed, "
                             "leave the variable out of the space and set it in the spec")
        if lower < lo or upper > hi:
            raise ValueError(f"bounds [{lower}, {upper}] leave the domain [{lo:g}, {hi:g}]")
        if start is not None and not lower <= start <= upper:
            raise ValueError(f"start {start} lies outside [{lower}, {upper}]")
        return self


class RealRange(_Range):
    """A real variable: bounds and an optional start point."""

    lower: float = Field(description="Lowest value NOMAD may try.")
    upper: float = Field(description="Highest value NOMAD may try.")
    start: float | None = Field(None, description="First point; default: the spec's own value.")


class IntRange(_Range):
    """An integer variable: bounds and an optional start point, all whole numbers."""

    integer: ClassVar[bool] = True
    lower: int = Field(description="Lowest value NOMAD may try.")
    upper: int = Field(description="Highest value NOMAD may try.")
    start: int | None = Field(None, description="First point; default: the spec's own value.")


class LearningRateRange(RealRange):
    domain: ClassVar[tuple[float, float]] = (-12.0, 0.0)  # 1e-12 .. 1: beyond either, no LoRA trains


class RankExponentRange(IntRange):
    domain: ClassVar[tuple[float, float]] = (0, 16)  # r = 1 .. 65536


class AlphaMultipleRange(RealRange):
    domain: ClassVar[tuple[float, float]] = (1e-3, 1e3)  # alpha must stay positive


class DropoutRange(RealRange):
    domain: ClassVar[tuple[float, float]] = (0.0, 0.9)  # < 1, with room for rounding


class MicroBatchRange(IntRange):
    domain: ClassVar[tuple[float, float]] = (1, 4096)


class NomadSpace(BaseModel):
    """The variables NOMAD tunes; each is optional, at least one is needed for a NOMAD sweep."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    log10_learning_rate: LearningRateRange | None = Field(
        None, description="log10 of training.learning_rate (real), e.g. lower -5 upper -3.")
    lora_rank_exp: RankExponentRange | None = Field(
        None, description="Exponent k of lora.r = 2**k (integer), e.g. lower 2 upper 6 for r 4..64.")
    alpha_multiple: AlphaMultipleRange | None = Field(
        None, description="lora.alpha as a multiple of lora.r (real); needs lora_rank_exp.")
    dropout: DropoutRange | None = Field(None, description="lora.dropout (real), within [0, 0.9].")
    micro_batch_size: MicroBatchRange | None = Field(
        None, description="training.micro_batch_size (integer).")

    @model_validator(mode="after")
    def _alpha_needs_rank(self) -> "NomadSpace":
        if self.alpha_multiple is not None and self.lora_rank_exp is None:
            raise ValueError("alpha_multiple scales the rank NOMAD picks, so it needs lora_rank_exp; "
                             "to tune alpha at a fixed rank, use a grid over lora.alpha")
        return self

    def names(self) -> list[str]:
        """The variables in NOMAD's coordinate order."""
        return [name for name in type(self).model_fields if getattr(self, name) is not None]

    def ranges(self) -> list[_Range]:
        return [getattr(self, name) for name in self.names()]

    def input_types(self) -> str:
        """NOMAD's BB_INPUT_TYPE value, e.g. `( R I R R )`."""
        return "( " + " ".join("I" if r.integer else "R" for r in self.ranges()) + " )"

    def lower(self) -> list[float]:
        return [r.lower for r in self.ranges()]

    def upper(self) -> list[float]:
        return [r.upper for r in self.ranges()]

    def start(self) -> list[float]:
        """The start point; raises SpaceError when a variable has none (see `tunegate.spec.nomad_points.start_from`)."""
        missing = [n for n, r in zip(self.names(), self.ranges()) if r.start is None]
        if missing:
            raise SpaceError(f"sweep.space has no start for {', '.join(missing)}; set "
                             f"sweep.space.{missing[0]}.start or fill it from the spec with tunegate.spec.nomad_points.start_from")
        return [r.start for r in self.ranges()]


