"""The map between NOMAD's points and spec overrides, and a space's start point from a spec.

    point = point_from_overrides(space, spec_overrides(spec))
    overrides = to_overrides(space, point)      # {"training.learning_rate": 0.0001, "lora.r": 16}

The search space's schema is the spec's (`tunegate.spec.search_space`); this is the arithmetic a
sweep does with it, and the checks of what NOMAD will be given (`checked_problem`), which the spec
stage runs too (TG175), so they live with the spec rather than with the sweep that runs NOMAD.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from tunegate.errors import SpaceError
from tunegate.spec.model import Spec
from tunegate.spec.search_space import NomadSpace

MAX_INT = 2**31 - 1  # NOMAD reads MAX_BB_EVAL, SEED and BB_MAX_BLOCK_SIZE as C ints

# 6 significant digits: overrides are read by people in MLflow (1e-4, not 0.00010000000000000009),
# and a relative change of 1e-6 in a hyperparameter changes no training run measurably.
_DIGITS = 6


def to_overrides(space: NomadSpace, point: list[float]) -> dict[str, Any]:
    """Dotted-key spec overrides for one NOMAD point, e.g. {"training.learning_rate": 0.0001, "lora.r": 16}."""
    # Clamp into the bounds: NOMAD's mesh arithmetic can land 1e-17 below a bound of 0.
    x = {name: min(max(float(v), rng.lower), rng.upper)
         for name, rng, v in zip(space.names(), space.ranges(), point)}
    out: dict[str, Any] = {}
    if "log10_learning_rate" in x:
        out["training.learning_rate"] = _round(10.0 ** x["log10_learning_rate"])
    if "lora_rank_exp" in x:
        out["lora.r"] = 2 ** int(round(x["lora_rank_exp"]))
    if "alpha_multiple" in x:
        out["lora.alpha"] = _round(x["alpha_multiple"] * out["lora.r"])
    if "dropout" in x:
        out["lora.dropout"] = round(x["dropout"], _DIGITS) + 0.0  # + 0.0: never -0.0
    if "micro_batch_size" in x:
        out["training.micro_batch_size"] = int(round(x["micro_batch_size"]))
    return out


def point_from_overrides(space: NomadSpace, overrides: dict[str, Any]) -> list[float]:
    """The NOMAD point of a set of overrides (the inverse of `to_overrides`).

    Raises SpaceError when a key the space needs is missing or its value is not positive.
    """
    def get(key: str) -> float:
        value = overrides.get(key)
        positive = key != "lora.dropout"  # dropout may be 0
        if not isinstance(value, (int, float)) or not math.isfinite(value) or (positive and value <= 0):
            raise SpaceError(f"{key} is {value!r}; the search space needs a positive number there")
        return float(value)

    values = {
        "log10_learning_rate": lambda: math.log10(get("training.learning_rate")),
        "lora_rank_exp": lambda: _exact(math.log2(get("lora.r"))),
        "alpha_multiple": lambda: get("lora.alpha") / get("lora.r"),
        "dropout": lambda: get("lora.dropout"),
        "micro_batch_size": lambda: get("training.micro_batch_size"),
    }
    return [values[name]() for name in space.names()]


def spec_overrides(spec: Spec) -> dict[str, Any]:
    """The spec's current values of every key a search space can set."""
    return {"training.learning_rate": spec.training.learning_rate, "lora.r": spec.lora.r,
            "lora.alpha": spec.lora.alpha, "lora.dropout": spec.lora.dropout,
            "training.micro_batch_size": spec.training.micro_batch_size}


def _round(value: float) -> float:
    return float(f"{value:.{_DIGITS}g}")


def _exact(value: float) -> float:
    """log2 of a power of two is a whole number; float noise (log2(8) = 2.9999999999999996) is not."""
    nearest = round(value)
    return float(nearest) if abs(value - nearest) < 1e-9 else value


def start_from(space: NomadSpace, spec: Spec) -> NomadSpace:
    """A copy whose missing start values are the spec's own settings, checked against the bounds."""
    point = point_from_overrides(space, spec_overrides(spec))
    update = {}
    for name, rng, value in zip(space.names(), space.ranges(), point):
        if rng.start is not None:
            continue
        if rng.integer and value != int(value):
            raise SpaceError(f"the spec's value for sweep.space.{name} is {value:g}, not a whole "
                             f"number (lora.r must be a power of two); set sweep.space.{name}.start")
        if not rng.lower <= value <= rng.upper:
            raise SpaceError(f"the spec's value for sweep.space.{name} is {value:g}, outside "
                             f"[{rng.lower:g}, {rng.upper:g}]; widen the bounds or set sweep.space.{name}.start")
        update[name] = rng.model_copy(update={"start": int(value) if rng.integer else value})
    return space.model_copy(update=update)


def checked_problem(space: NomadSpace | dict[str, Any], *, max_evals: int, seed: int,
                    max_block_size: int = 1) -> NomadSpace:
    """The space and settings NOMAD will be given, validated (SpaceError, never a crash): the spec
    stage runs this before a sweep starts (TG175), the search again before NOMAD sees them."""
    try:
        space = NomadSpace.model_validate(space)
    except ValidationError as exc:
        raise SpaceError(f"sweep.space is invalid: {exc}") from None
    if not space.names():
        raise SpaceError("sweep.space has no variable; add log10_learning_rate, lora_rank_exp, "
                         "alpha_multiple, dropout or micro_batch_size")
    for name, value, low in (("max_evals", max_evals, 1), ("seed", seed, 0), ("max_block_size", max_block_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_INT:
            raise SpaceError(f"{name} must be a whole number in [{low}, {MAX_INT}], got {value!r}")
    _check_point(space, space.start(), space.lower(), space.upper())
    return space


def _check_point(space: NomadSpace, x0: list[float], lower: list[float], upper: list[float]) -> None:
    """The last guard before NOMAD, independent of how the space was built (model_construct skips pydantic)."""
    for name, rng, x, lo, hi in zip(space.names(), space.ranges(), x0, lower, upper):
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (x, lo, hi)):
            raise SpaceError(f"sweep.space.{name}: bounds and start must be finite numbers, got {lo!r}, {hi!r}, {x!r}")
        if not lo < hi or not lo <= x <= hi:
            raise SpaceError(f"sweep.space.{name}: need lower < upper and start within them, got {lo}, {hi}, {x}")
        if rng.integer and not all(float(v).is_integer() for v in (x, lo, hi)):
            raise SpaceError(f"sweep.space.{name} is an integer variable; got {lo}, {hi}, {x}")
