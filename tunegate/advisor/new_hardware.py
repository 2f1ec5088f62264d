"""The smallest catalog hardware a physically impossible run fits on: the source's one exception.

    suggestion = smallest_fit(spec, estimate)   # None unless some catalog GPU (and count) holds the run

The source's rule is "never suggest new hardware unless the current configuration is physically
impossible". So this runs only when the run does not fit the declared GPUs even at micro batch 1
with gradient checkpointing (the estimate's TG403), and its suggestion is marked `new_hardware`.

Candidates are the catalog GPUs that hold more than the declared one and run the spec's precision
and attention kernel. A trainer that does not shard holds the whole base on every GPU, so more GPUs
never make the run fit: the count stays the declared one. Where the spec shards (training.sharding,
an axolotl or TRL config), 1, 2, 4 and 8 times the declared count are tried too, the global batch
kept by lowering accumulation where it divides. The smallest is the one with the least memory in
all (then the fewest GPUs), on which the run fits as written, else with gradient checkpointing,
else at micro batch 1 with checkpointing (accumulation raised to keep the global batch).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tunegate.advisor.advice import Suggestion
from tunegate.advisor.verify import apply_changes, hardware_support
from tunegate.estimate.run import Estimate
from tunegate.spec import gpus
from tunegate.spec.model import Spec

COUNT_FACTORS = (1, 2, 4, 8)  # multiples of the declared count tried where the run shards


def smallest_fit(spec: Spec, estimate: Callable[[Spec], Estimate | None]) -> Suggestion | None:
    """The new-hardware suggestion for the smallest catalog hardware the run fits on, or None."""
    if spec.hardware.custom is not None:
        return None  # hardware.custom's figures would stay in force whatever hardware.gpu says
    for gpu, count in _candidates(spec):
        for extra in _variants(spec, count):
            changes = {"hardware.gpu": gpu.name, **extra}
            try:
                new = apply_changes(spec, changes)
            except ValueError:
                continue
            est = estimate(new)
            if est is not None and est.memory.verdict == "fits":
                return _suggestion(spec, changes, est)
    return None


def _candidates(spec: Spec) -> Iterator[tuple[gpus.GPU, int]]:
    """(GPU, count) pairs that could hold more than the declared hardware, smallest in all first."""
    declared = gpus.for_hardware(spec.hardware)
    floor = declared.memory_gib if declared is not None else 0.0
    sharded = spec.training.sharding != "none"
    counts = [spec.hardware.count * k for k in COUNT_FACTORS] if sharded else [spec.hardware.count]
    found = []
    for gpu in gpus.CATALOG.values():
        if hardware_support(apply_changes(spec, {"hardware.gpu": gpu.name})) is not None:
            continue  # it cannot run the spec's precision or attention kernel
        found += [(gpu.memory_gib * n, n, gpu.name, gpu) for n in counts
                  if gpu.memory_gib > floor or n > spec.hardware.count]
    for _, count, _, gpu in sorted(found, key=lambda c: c[:3]):
        yield gpu, count


def _variants(spec: Spec, count: int) -> Iterator[dict[str, Any]]:
    """The run as written, then with checkpointing, then at micro batch 1 too (the global batch kept)."""
    t = spec.training
    batch = t.micro_batch_size * t.grad_accum_steps * spec.hardware.count
    base: dict[str, Any] = {}
    if count != spec.hardware.count:
        base = {"hardware.count": count, "training.grad_accum_steps": _accumulation(batch, t.micro_batch_size, count)}
    yield base
    if not t.gradient_checkpointing:
        yield {**base, "training.gradient_checkpointing": True}
    if t.micro_batch_size > 1:
        yield {**base, "training.gradient_checkpointing": True, "training.micro_batch_size": 1,
               "training.grad_accum_steps": _accumulation(batch, 1, count)}


def _accumulation(global_batch: int, micro: int, count: int) -> int:
    """The accumulation that keeps `global_batch` at `micro` x `count` (the nearest where none does:
    the suggestion then says the global batch changes)."""
    return max(1, round(global_batch / (micro * count)))


def _suggestion(spec: Spec, changes: dict[str, Any], est: Estimate) -> Suggestion:
    hw = spec.hardware
    main, count = changes["hardware.gpu"], changes.get("hardware.count", hw.count)
    batch_changes = _global_batch(spec, changes) != _global_batch(spec, {})
    setting = "hardware.gpu"
    if gpus.lookup(main) is gpus.lookup(hw.gpu):  # the same GPU type, more of them (a sharded run)
        setting, changes = "hardware.count", {k: v for k, v in changes.items() if k != "hardware.gpu"}
    proposed = changes.pop(setting)
    m = est.memory
    return Suggestion(
        setting=setting, current=getattr(hw, setting.split(".")[1]), proposed=proposed, companions=changes,
        changes_global_batch=batch_changes,
        rationale=f"New hardware: the run cannot fit on {hw.count} x {hw.gpu} even at micro batch 1 with "
                  f"gradient checkpointing; {count} x {main} is the smallest catalog hardware it fits on "
                  f"({m.peak_gib:.1f} GiB per GPU of {m.capacity_gib:g}, band up to {m.high_gib:.1f}).",
        risks="Another GPU: its price and availability" + (
            ", and ROCm PyTorch instead of CUDA." if gpus.lookup(main).family.startswith("cdna") else "."),
        monitor="Peak memory in the first steps against this estimate.")


def _global_batch(spec: Spec, changes: dict[str, Any]) -> int:
    t, hw = spec.training, spec.hardware
    return (changes.get("training.micro_batch_size", t.micro_batch_size)
            * changes.get("training.grad_accum_steps", t.grad_accum_steps) * changes.get("hardware.count", hw.count))
