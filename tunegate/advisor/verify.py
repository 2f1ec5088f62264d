"""Check a suggestion against the physical model before anyone sees it as advice.

A suggestion is verified when the target trainer runs the setting it changes
(`tunegate.advisor.targets`), the spec with it applied still validates, fits in GPU memory,
keeps the declared hardware (unless the job is impossible on it: then it is marked new hardware),
keeps the global batch or says
openly that it changes it, and pays off: it makes the run faster by our estimate (purpose
"speed"), or it makes a run that does not fit fit (purpose "memory", which may cost time). A change
that makes the run slower or no faster is not advice. The estimate's hours with it applied are
recorded either way; the time saved is ours, and set only on a verified suggestion.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tunegate.advisor.advice import HARDWARE_SETTINGS, Suggestion, fmt_hours, fraction
from tunegate.advisor.targets import TRAINERS, Trainer
from tunegate.errors import EstimateError
from tunegate.estimate.run import Estimate, estimate_run
from tunegate.facts import GateFacts
from tunegate.spec import gpus
from tunegate.spec.model import Spec


def apply_changes(spec: Spec, changes: dict[str, Any]) -> Spec:
    """A new, validated Spec with dotted-key `changes` applied. Raises ValueError when invalid."""
    data = spec.model_dump(mode="python")
    for key, value in changes.items():
        section, _, field = key.partition(".")
        if section not in data or not isinstance(data[section], dict) or field not in data[section]:
            raise ValueError(f"unknown setting '{key}'")
        data[section][field] = value
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid value for {where}: {first['msg']}") from None


def global_batch(spec: Spec) -> int:
    t = spec.training
    return t.micro_batch_size * t.grad_accum_steps * spec.hardware.count


# A change must save at least this share of the hours to count as faster: our estimate's own
# rounding and a 0.1 % gain are not worth a changed config.
MIN_SAVING = 0.01
NO_GAIN = "makes the run"  # how a rejection for no gain begins (the rule engine drops its own)


def verify(suggestion: Suggestion, spec: Spec, facts: GateFacts, base_dir: Path | None,
           impossible_here: bool, trainer: Trainer = TRAINERS["tunegate"]) -> tuple[Suggestion, Spec | None]:
    """The suggestion marked verified or rejected, and the spec with it applied (None if rejected)."""
    refused = next((why for key in suggestion.changes() if (why := trainer.refuses(key))), None)
    reason, new_spec, est = (refused, None, None) if refused else _first_problem(
        suggestion, spec, facts, base_dir, impossible_here)
    update: dict[str, Any] = {"verified": False, "rejected_reason": reason, "expected_time_saving": None,
                              "purpose": None, "new_hardware": bool(HARDWARE_SETTINGS & set(suggestion.changes()))}
    if est is not None:
        update.update(predicted_hours=float(f"{est.hours:.4g}"), predicted_peak_gib=est.memory.peak_gib)
    if reason is None:
        before = estimate_run(spec, facts, base_dir)
        purpose, reason = _payoff(suggestion, spec, before, est)
        saving = fraction(1.0 - est.hours / before.hours) if before.hours > 0 else None
        update.update(verified=reason is None, rejected_reason=reason, purpose=purpose,
                      expected_time_saving=saving if reason is None else None)
    return suggestion.model_copy(update=update), (new_spec if update["verified"] else None)


def _payoff(s: Suggestion, spec: Spec, before: Estimate, after: Estimate) -> tuple[str | None, str | None]:
    """(purpose, None) when the change is worth making, else (None, why not)."""
    if before.memory.verdict != "fits" and after.memory.verdict == "fits":
        return "memory", None
    if before.hours > 0 and after.hours <= before.hours * (1 - MIN_SAVING):
        return "speed", None
    slower = after.hours > before.hours * (1 + MIN_SAVING)
    # fp16 -> bf16 at no cost in time: fp16's range overflows to NaN losses, bf16's does not (TG122).
    if s.changes() == {"training.precision": "bf16"} and spec.training.precision == "fp16" and not slower:
        return "stability", None
    return None, (f"{NO_GAIN} {'slower' if slower else 'no faster'} by our estimate ({fmt_hours(before.hours)} -> "
                  f"{fmt_hours(after.hours)}) and is not needed to fit memory")


def _first_problem(s: Suggestion, spec: Spec, facts: GateFacts, base_dir: Path | None,
                   impossible_here: bool) -> tuple[str | None, Spec | None, Estimate | None]:
    if HARDWARE_SETTINGS & set(s.changes()) and not impossible_here:
        return ("proposes new hardware, but the job fits on the declared "
                f"{spec.hardware.count} x {spec.hardware.gpu}"), None, None
    try:
        new = apply_changes(spec, s.changes())
    except ValueError as exc:
        return str(exc), None, None
    problem = hardware_support(new)
    if problem:
        return problem, None, None
    before, after = global_batch(spec), global_batch(new)
    if before != after and not s.changes_global_batch:
        return (f"changes the global batch from {before} to {after} sequences without saying so "
                "(the learning-rate schedule and results would change)"), None, None
    try:
        est = estimate_run(new, facts, base_dir)
    except EstimateError as exc:
        return f"cannot be estimated: {exc}", None, None
    if est.memory.verdict == "does not fit":
        return (f"would not fit in GPU memory: {est.memory.peak_gib:.1f} GiB per GPU of "
                f"{est.memory.capacity_gib:g} (biggest term: {est.memory.biggest})"), new, est
    return None, new, est


def hardware_support(spec: Spec) -> str | None:
    """What the GPU cannot do that the changed spec asks for (bf16, flash attention)."""
    gpu = gpus.for_hardware(spec.hardware)
    if gpu is None:
        return f"unknown GPU '{spec.hardware.gpu}'"
    t = spec.training
    if t.precision == "bf16" and not gpu.supports_bf16:
        return f"the {gpu.name} has no bf16"
    if t.attention == "flash_attention_2" and (not gpu.flash_attention or t.precision == "fp32"):
        return f"flash_attention_2 is not available on the {gpu.name} in {t.precision}"
    return None
