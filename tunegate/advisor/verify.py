"""Check a suggestion against the physical model before anyone sees it as advice.

A suggestion is verified when the spec with it applied still validates, fits in GPU memory,
keeps the declared hardware (unless the job is impossible on it), and keeps the global batch or
says openly that it changes it. The estimate's hours with it applied are recorded either way.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tunegate.advisor.advice import HARDWARE_SETTINGS, Suggestion
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


def verify(suggestion: Suggestion, spec: Spec, facts: GateFacts, base_dir: Path | None,
           impossible_here: bool) -> tuple[Suggestion, Spec | None]:
    """The suggestion marked verified or rejected, and the spec with it applied (None if rejected)."""
    reason, new_spec, est = _first_problem(suggestion, spec, facts, base_dir, impossible_here)
    update: dict[str, Any] = {"verified": reason is None, "rejected_reason": reason}
    if est is not None:
        update.update(predicted_hours=round(est.hours, 2), predicted_peak_gib=est.memory.peak_gib)
    return suggestion.model_copy(update=update), (new_spec if reason is None else None)


def _first_problem(s: Suggestion, spec: Spec, facts: GateFacts, base_dir: Path | None,
                   impossible_here: bool) -> tuple[str | None, Spec | None, Estimate | None]:
    if HARDWARE_SETTINGS & set(s.changes()) and not impossible_here:
        return ("proposes new hardware, but the job fits on the declared "
                f"{spec.hardware.count} x {spec.hardware.gpu}"), None, None
    try:
        new = apply_changes(spec, s.changes())
    except ValueError as exc:
        return str(exc), None, None
    problem = _hardware_support(new)
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


def _hardware_support(spec: Spec) -> str | None:
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
