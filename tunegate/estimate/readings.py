"""Readings of a stated run: every method the spec may mean, and every wall-clock time someone claimed.

    for r in readings(spec, facts, base_dir): print(r.method, r.memory_verdict, [c.verdict for c in r.claims])

A spec that claims a wall-clock time but does not say `training.method` (the advisor source's
worked case does not) is read both as LoRA and as a full fine-tune: a claimed time may be
plausible under one and physically impossible under the other, and a full fine-tune may not fit.
A claim is judged by the MFU it implies on the declared GPUs (PaLM's convention,
`throughput.implied_mfu`): above 100 % it is impossible, above 60 % optimistic, below 10 % a sign
of misconfiguration.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tunegate.estimate.run import (
    Estimate,
    dataset_tokens,
    estimate_setup,
    resolve_architecture,
    resolve_gpu,
    saved_params,
)
from tunegate.estimate.setup import setup_from_spec
from tunegate.estimate.throughput import implied_mfu
from tunegate.facts import GateFacts
from tunegate.spec.model import Spec

# fine-tuning stacks reach 30-55 % MFU (tunegate.estimate.throughput): above 60 % a time is
# optimistic, above 100 % impossible, below 10 % something is probably misconfigured
OPTIMISTIC_MFU, PESSIMISTIC_MFU = 0.60, 0.10
ClaimVerdict = Literal["impossible", "optimistic", "plausible", "suspiciously slow"]


class Claim(BaseModel):
    """One stated wall-clock time, judged by the MFU it implies."""

    model_config = ConfigDict(extra="forbid")

    label: str          # "your estimate" (estimate.wall_clock_hours) or "advised" (estimate.advised_hours)
    key: str
    hours: float
    implied_mfu: float
    verdict: ClaimVerdict


class Reading(BaseModel):
    """The run read as one training method."""

    model_config = ConfigDict(extra="forbid")

    method: str
    stated: bool        # the spec says this method (False: a reading the spec leaves open)
    hours: float        # our own estimate
    mfu: float          # at our estimate's speed
    peak_gib: float
    high_gib: float
    capacity_gib: float
    memory_verdict: str
    sharding: str
    claims: list[Claim]


def judge(mfu: float) -> ClaimVerdict:
    if mfu > 1.0:
        return "impossible"
    if mfu > OPTIMISTIC_MFU:
        return "optimistic"
    return "suspiciously slow" if mfu < PESSIMISTIC_MFU else "plausible"


def claims_of(spec: Spec, est: Estimate) -> list[Claim]:
    """Every wall-clock time the spec states, judged on `est`'s FLOPs per token and GPUs."""
    stated = [("your estimate", "estimate.wall_clock_hours", spec.estimate.wall_clock_hours),
              ("advised", "estimate.advised_hours", spec.estimate.advised_hours)]
    out = []
    for label, key, hours in stated:
        if hours:
            mfu = implied_mfu(est.total_tokens, hours, est.gpu_count, est.throughput.model_flops_per_token,
                              est.throughput.peak_tflops)
            out.append(Claim(label=label, key=key, hours=hours, implied_mfu=round(mfu, 4), verdict=judge(mfu)))
    return out


def methods_to_read(spec: Spec) -> list[str]:
    """The stated method first; both LoRA and full fine-tuning when a time is claimed for a run
    whose method the spec does not say (a time that is plausible one way may be impossible the other)."""
    stated = "qlora" if spec.training.method == "lora" and spec.model.quantization == "4bit" else spec.training.method
    claimed = spec.estimate.wall_clock_hours or spec.estimate.advised_hours
    if "method" in spec.training.model_fields_set or not claimed:
        return [stated]
    return [stated] + [m for m in ("lora", "full") if m != stated]


def reading_of(spec: Spec, est: Estimate, stated: bool) -> Reading:
    m = est.memory
    return Reading(method=est.setup.method, stated=stated, hours=round(est.hours, 2), mfu=est.throughput.mfu,
                   peak_gib=m.peak_gib, high_gib=m.high_gib, capacity_gib=m.capacity_gib,
                   memory_verdict=m.verdict, sharding=est.setup.sharding, claims=claims_of(spec, est))


def readings(spec: Spec, facts: GateFacts | None = None, base_dir: Path | None = None,
             first: Estimate | None = None) -> list[Reading]:
    """The run read as each method it may mean (`first`: the stated method's estimate, if made)."""
    facts = facts or GateFacts()
    methods = methods_to_read(spec)
    arch, gpu = resolve_architecture(spec, base_dir), resolve_gpu(spec)
    tokens = first.tokens if first is not None else dataset_tokens(spec, facts)  # the same count as the first
    out = []
    for i, method in enumerate(methods):
        if i == 0 and first is not None:
            est = first
        else:
            saved = 0 if method == "full" else saved_params(arch, spec)
            setup = setup_from_spec(spec, arch=arch)
            method = "qlora" if method == "lora" and setup.method == "qlora" else method  # a 4-bit checkpoint
            setup = setup.model_copy(update={"method": method, "saved_module_params": saved})
            # the mini-run measured the stated method: its speed and memory say nothing of the other
            est = estimate_setup(spec, arch, gpu, setup, tokens, facts if i == 0 else None)
        out.append(reading_of(spec, est, stated="method" in spec.training.model_fields_set))
    return out


def verdict_lines(found: list[Reading], gpu_count: int, gpu: str) -> list[str]:
    """Plain sentences on every claimed time, across the readings (what the CLI prints last)."""
    lines = []
    labels = {c.label: c for r in found for c in r.claims}
    for label in labels:
        per = [(r.method, next(c for c in r.claims if c.label == label)) for r in found]
        named = CLAIM_NAMES.get(label, "the claimed {h:g} h").format(h=per[0][1].hours)
        needs = " and ".join(f"{c.implied_mfu:.0%} as {METHOD_NAMES[m]}" for m, c in per)
        if all(c.verdict == "impossible" for _, c in per):
            either = " under either reading" if len(per) > 1 else ""
            lines.append(f"verdict: {named} is impossible on {gpu_count} x {gpu}{either}: it needs {needs} "
                         "of the GPUs' peak FLOP/s")
        else:
            how = ", ".join(f"{c.verdict} as {METHOD_NAMES[m]}" for m, c in per)
            lines.append(f"verdict: {named} needs {needs} MFU ({how})")
    return lines


METHOD_NAMES = {"lora": "LoRA", "qlora": "QLoRA", "full": "full fine-tuning"}
CLAIM_NAMES = {"your estimate": "your own {h:g} h", "advised": "the advised {h:g} h"}


def render_readings(found: list[Reading], gpu_count: int, gpu: str) -> list[str]:
    """The readings as plain-text lines: one block per method, then the verdict on each claim."""
    if not found or (len(found) == 1 and not found[0].claims):
        return []
    head = ("readings (the spec does not set training.method: both are shown)" if len(found) > 1
            else f"reading as {METHOD_NAMES[found[0].method]}")
    lines = ["", f"  {head}"]
    for r in found:
        shard = ", unsharded" if r.sharding == "none" and gpu_count > 1 else ""
        lines.append(f"    as {METHOD_NAMES[r.method]:<17} our estimate {r.hours:,.0f} h at {r.mfu:.0%} MFU; "
                     f"memory {r.peak_gib:,.1f} GiB per GPU of {r.capacity_gib:g} ({r.memory_verdict}{shard})")
        for c in r.claims:
            lines.append(f"      {c.label} {c.hours:g} h needs {c.implied_mfu:.0%} MFU: {c.verdict}")
    return lines + [f"  {line}" for line in verdict_lines(found, gpu_count, gpu)]


def summary_with_readings(spec: Spec, est: Estimate, facts: GateFacts | None = None,
                          base_dir: Path | None = None) -> dict:
    """`est.summary()` plus the readings: what the stage records and the advisor is sent."""
    summary = est.summary()
    summary["readings"] = [r.model_dump() for r in readings(spec, facts, base_dir, first=est)]
    return summary
