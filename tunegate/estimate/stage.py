"""Stage 3: will the full run fit, how long will it take, and is the user's own estimate plausible?

Run: `tunegate check SPEC` (the gate) or `tunegate estimate SPEC` (this stage alone, in detail).
Imports neither torch nor transformers: the model's config.json is enough.
"""
from __future__ import annotations

import time
from pathlib import Path

from tunegate.errors import EstimateError
from tunegate.estimate.memory import estimate_memory
from tunegate.estimate.run import Estimate, estimate_run, resolve_architecture, resolve_gpu
from tunegate.estimate.setup import setup_from_spec
from tunegate.report import FindingCollector, StageResult
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

STAGE = "estimate"
# The user's wall-clock estimate implies an MFU; fine-tuning stacks reach 30-55 % (see
# tunegate.estimate.throughput), so above 60 % the estimate is optimistic, above 100 % impossible, and
# below 10 % something (a data loader, a CPU fallback, padding) is probably misconfigured.
OPTIMISTIC_MFU, PESSIMISTIC_MFU = 0.60, 0.10

_FIXES = {
    "activations": "Turn on training.gradient_checkpointing (about 33 % more compute) or lower "
                   "training.micro_batch_size and raise grad_accum_steps to keep the global batch.",
    "logits": "Lower training.micro_batch_size (raise grad_accum_steps to keep the global batch) or "
              "training.max_seq_len: the logits are batch x seq x vocab values in fp32.",
    "weights": "Load the base in 4 bit (model.quantization: 4bit, QLoRA) or use GPUs with more memory "
               "(tunegate's trainer does not shard: TG160).",
}


def run_stage(ctx: GateContext) -> StageResult:
    """Run the estimate on `ctx.spec`, put its summary in `ctx.facts.estimate`, report findings."""
    start = time.perf_counter()
    out = FindingCollector(STAGE, ctx.cap)
    spec: Spec = ctx.spec
    file, base = ctx.spec_file, ctx.base_dir
    try:
        est = estimate_run(spec, ctx.facts, base)
    except EstimateError as exc:
        severity = "error" if exc.code == "TG405" else "warning"
        out.add(exc.code, severity, str(exc), exc.hint, file=file, key=exc.key)
        return out.result(time.perf_counter() - start, {"summary": "not estimated"})
    summary = est.summary()
    ctx.facts.estimate = summary
    _memory_findings(out, est, spec, file, base)
    _user_estimate_findings(out, est, file)
    if est.tokens.source == "characters":
        out.add("TG409", "info", f"training tokens estimated from characters: {est.tokens.tokens:,} "
                f"(characters / 4) in {spec.data.train.name}",
                "Set estimate.dataset_tokens, or run the mini-run's token audit, for an exact count.",
                file=file, key="estimate.dataset_tokens")
    stats = {"summary": _summary_line(est), **summary}
    return out.result(time.perf_counter() - start, stats)


def _memory_findings(out: FindingCollector, est: Estimate, spec: Spec, file: str | None,
                     base: Path | None) -> None:
    m = est.memory
    where = f"{m.peak_gib:.1f} GiB per GPU of the {est.gpu}'s {m.capacity_gib:g} GiB"
    if m.verdict == "does not fit":
        if not fits_at_minimum(spec, base):
            out.add("TG403", "error", f"the run cannot fit on {est.gpu_count} x {est.gpu} even at "
                    f"micro batch 1 with gradient checkpointing ({where} now; biggest term: {m.biggest})",
                    "Use GPUs with more memory or load the base in 4 bit (model.quantization: 4bit, "
                    "QLoRA); tunegate's trainer does not shard (TG160).", file=file, key="hardware.gpu")
            return
        out.add("TG401", "error", f"the run does not fit in GPU memory: {where}; biggest term: "
                f"{m.biggest} ({m.breakdown_gib[m.biggest]:.1f} GiB)",
                _FIXES.get(m.biggest, "Lower training.micro_batch_size or max_seq_len."),
                file=file, key="training.micro_batch_size")
    elif m.verdict == "tight":
        out.add("TG402", "warning", f"GPU memory is tight: {where}; a longer batch or allocator "
                f"fragmentation may run out of memory (biggest term: {m.biggest})",
                _FIXES.get(m.biggest, "Lower training.micro_batch_size."), file=file,
                key="training.micro_batch_size")


def fits_at_minimum(spec: Spec, base: Path | None = None) -> bool:
    """Whether the run fits at micro batch 1 with gradient checkpointing on the declared GPUs."""
    try:
        arch, gpu = resolve_architecture(spec, base), resolve_gpu(spec)
    except EstimateError:
        return True  # nothing to judge by: never claim impossibility without a model
    setup = setup_from_spec(spec).model_copy(update={"micro_batch_size": 1, "gradient_checkpointing": True})
    return estimate_memory(arch, setup, gpu).verdict != "does not fit"


def _user_estimate_findings(out: FindingCollector, est: Estimate, file: str | None) -> None:
    mfu, hours = est.user_implied_mfu, est.user_hours
    if mfu is None or hours is None:
        return
    ours = f"our estimate is {est.hours:.1f} h at {est.throughput.mfu:.0%} MFU"
    if mfu > 1.0:
        out.add("TG406", "warning", f"estimate.wall_clock_hours {hours:g} is physically impossible: it "
                f"needs {mfu:.0%} of the GPUs' peak FLOP/s for {est.total_tokens:.3g} tokens; {ours}",
                "Recheck the dataset size and epochs, or plan with our estimate.", file=file,
                key="estimate.wall_clock_hours")
    elif mfu > OPTIMISTIC_MFU:
        out.add("TG407", "warning", f"estimate.wall_clock_hours {hours:g} is optimistic: it implies "
                f"{mfu:.0%} MFU, above the ~{OPTIMISTIC_MFU:.0%} well-tuned stacks reach; {ours}",
                "Plan with a longer time, or measure tokens/s with the mini-run.", file=file,
                key="estimate.wall_clock_hours")
    elif mfu < PESSIMISTIC_MFU:
        out.add("TG408", "warning", f"estimate.wall_clock_hours {hours:g} implies only {mfu:.1%} MFU; "
                f"something is probably misconfigured (CPU fallback, padding, a slow data loader); {ours}",
                "Check that the run uses the GPU, bf16 and a fused attention kernel.", file=file,
                key="estimate.wall_clock_hours")


def _summary_line(est: Estimate) -> str:
    m = est.memory
    cost = f", ${est.cost_usd:,.0f}" if est.cost_usd is not None else ""
    return (f"{m.peak_gib:.1f}/{m.capacity_gib:g} GiB per GPU ({m.verdict}), "
            f"{est.throughput.tokens_per_s:,.0f} tok/s per GPU, {est.hours:,.1f} h on "
            f"{est.gpu_count} x {est.gpu}{cost}")
