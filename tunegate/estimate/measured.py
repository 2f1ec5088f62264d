"""What the mini-run measured, turned into inputs of the estimate: only on the same GPU type and model.

    tps = measured_tokens_per_s(spec, gpu, facts)       # replaces the MFU prior
    check = memory_check(spec, arch, gpu, setup, facts) # predicted vs measured peak at the mini-run's shapes

A mini-run on the CPU (or another GPU type) is reported as what it is, labelled with its device,
and never replaces a GPU prior: CPU speed and RSS say nothing about an A100.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tunegate.estimate.architecture import Architecture
from tunegate.estimate.memory import GIB, MemoryEstimate, estimate_memory, verdict_of
from tunegate.estimate.setup import TrainSetup
from tunegate.estimate.throughput import ASSUMPTIONS
from tunegate.facts import GateFacts, MiniRunFacts
from tunegate.spec import gpus
from tunegate.spec.model import Spec

# A measured/predicted ratio outside this range says the mini-run measured something else (a CPU
# fallback, another model): it is reported, never applied.
PLAUSIBLE_RATIO = (0.5, 2.0)


class MemoryCheck(BaseModel):
    """The memory model against the mini-run's own peak, at the mini-run's batch shape."""

    model_config = ConfigDict(extra="forbid")

    micro_batch_size: int
    seq_len: int
    predicted_gib: float
    measured_gib: float
    ratio: float      # measured / predicted
    applied: bool     # whether the full-run estimate was scaled by it


def _same_gpu_and_model(spec: Spec, gpu: gpus.GPU, run: MiniRunFacts | None) -> bool:
    if run is None or run.device not in (None, "cuda") or not run.gpu:
        return False  # `gpu` is only set on a CUDA device: a CPU mini-run never stands in for a GPU
    return gpus.lookup(run.gpu) == gpu and (run.model or spec.model.id) == spec.model.id


def measured_tokens_per_s(spec: Spec, gpu: gpus.GPU, facts: GateFacts) -> float | None:
    """The mini-run's tokens/s when it ran this model on the same GPU type, else None; for a compiled
    full run, the mini-run's eager speed times the estimate's own compile speed-up (it never compiles)."""
    run = facts.mini_run
    if not _same_gpu_and_model(spec, gpu, run) or not run.tokens_per_s or run.tokens_per_s <= 0:
        return None
    return float(run.tokens_steady_or_mean()) * (ASSUMPTIONS["compile"] if spec.training.compile else 1.0)


def memory_check(spec: Spec, arch: Architecture, gpu: gpus.GPU, setup: TrainSetup,
                 facts: GateFacts) -> MemoryCheck | None:
    """Predicted vs measured peak at the mini-run's shape, when it ran on the same GPU type."""
    run = facts.mini_run
    if not _same_gpu_and_model(spec, gpu, run) or not run.train_peak_memory_bytes or not run.batch_seq_len:
        return None
    # the mini-run's own loop: one GPU, its longest padded batch, eager (it never compiles: a compiled
    # prediction set beside an eager peak read 1.57 and scaled an 8B peak of 89 GiB to 140, issue 31),
    # the full run's optimizer (fused only for adamw_torch_fused; tunegate.training.optimizers)
    mini = setup.model_copy(update={"seq_len": run.batch_seq_len, "gpu_count": 1, "sharding": "none",
                                    "micro_batch_size": run.micro_batch_size or setup.micro_batch_size,
                                    "compile": False, "optimizer_impl": "fused" if spec.training.optimizer
                                    == "adamw_torch_fused" else "foreach"})
    predicted = estimate_memory(arch, mini, gpu).peak_allocated_gib
    measured = run.train_peak_memory_bytes / GIB
    ratio = measured / predicted
    return MemoryCheck(micro_batch_size=mini.micro_batch_size, seq_len=mini.seq_len,
                       predicted_gib=round(predicted, 3), measured_gib=round(measured, 3), ratio=round(ratio, 4),
                       applied=PLAUSIBLE_RATIO[0] <= ratio <= PLAUSIBLE_RATIO[1])


def calibrated(memory: MemoryEstimate, check: MemoryCheck | None) -> MemoryEstimate:
    """The memory estimate scaled by the mini-run's measured/predicted ratio, when it applies."""
    if check is None or not check.applied:
        return memory
    r = check.ratio
    peak, low, high = memory.peak_gib * r, memory.low_gib * r, memory.high_gib * r
    return memory.model_copy(update={
        "peak_gib": round(peak, 3), "low_gib": round(low, 3), "high_gib": round(high, 3),
        "peak_allocated_gib": round(memory.peak_allocated_gib * r, 3),
        "verdict": verdict_of(peak, high, memory.capacity_gib)})
