"""The deterministic advisor: rules an HPC engineer applies, each checked by the estimate.

    advice = advise_with_rules(spec)

Rules run in order on the spec as improved so far, so later rules see earlier changes:
precision (bf16 where the GPU has it), memory (micro-batching or gradient checkpointing exactly
when the run does not fit, whichever costs less time), attention (fused kernels; flash for long
sequences), micro batch (raise it while memory fits, lowering accumulation to keep the
global batch), torch.compile with its mode. New hardware only when the job is impossible on the
declared GPUs (`tunegate.advisor.new_hardware`): an alternative, never applied to the other advice.
Every suggestion is verified for the trainer the config runs on (`tunegate.advisor.targets`).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunegate.advisor.advice import Advice, Suggestion, fmt_hours
from tunegate.advisor.new_hardware import smallest_fit
from tunegate.advisor.targets import TRAINERS, Trainer
from tunegate.advisor.verify import NO_GAIN, apply_changes, verify
from tunegate.errors import EstimateError
from tunegate.estimate.readings import readings
from tunegate.estimate.run import Estimate, estimate_run
from tunegate.estimate.stage import fits_at_minimum
from tunegate.estimate.throughput import ASSUMPTIONS, COMPILE_WARMUP_MINUTES
from tunegate.facts import GateFacts
from tunegate.spec import gpus
from tunegate.spec.bounds import MAX_BATCH
from tunegate.spec.model import Spec

# Sequences at least this long are "long": the attention kernel's memory and speed matter.
LONG_SEQ = 2048
Rule = Callable[[Spec, Estimate, Any], "Suggestion | None"]


class _Ctx:
    """What every rule may read: measured facts, the spec's folder, whether the job is impossible."""

    def __init__(self, facts: GateFacts, base_dir: Path | None, impossible: bool, trainer: Trainer):
        self.facts, self.base_dir, self.impossible, self.trainer = facts, base_dir, impossible, trainer

    def estimate(self, spec: Spec) -> Estimate | None:
        try:
            return estimate_run(spec, self.facts, self.base_dir)
        except EstimateError:
            return None


def _precision(spec: Spec, est: Estimate, ctx: _Ctx) -> Suggestion | None:
    gpu = gpus.for_hardware(spec.hardware)
    if spec.training.precision == "bf16" or gpu is None or not gpu.supports_bf16:
        return None
    return Suggestion(setting="training.precision", current=spec.training.precision, proposed="bf16",
                      rationale=f"The {gpu.name} runs bf16 on its tensor cores; bf16 has fp32's range, "
                                "so no loss scaling and no fp16 overflow to NaN.",
                      risks="Tiny numeric differences from the previous runs.",
                      monitor="Loss curve over the first steps against the old run.")


def _attention(spec: Spec, est: Estimate, ctx: _Ctx) -> Suggestion | None:
    t, gpu = spec.training, gpus.for_hardware(spec.hardware)
    flash_ok = gpu is not None and gpu.flash_attention and t.precision != "fp32"
    if t.attention == "eager":
        proposed = "flash_attention_2" if flash_ok else "sdpa"
        why = (f"Eager attention keeps a {t.max_seq_len} x {t.max_seq_len} score matrix per head in "
               "memory and reads it back; fused kernels never materialise it.")
    elif t.attention == "sdpa" and flash_ok and t.max_seq_len >= LONG_SEQ:
        proposed = "flash_attention_2"
        why = (f"At {t.max_seq_len} tokens FlashAttention-2 handles grouped-query attention natively "
               "(transformers' SDPA path repeats k/v to every head first) and supports padding-free batches.")
    else:
        return None
    return Suggestion(setting="training.attention", current=t.attention, proposed=proposed, rationale=why,
                      risks="flash_attention_2 needs the flash-attn package built for your CUDA.",
                      monitor="Loss should match the previous kernel's to ~1e-3.")


def _memory(spec: Spec, est: Estimate, ctx: _Ctx) -> Suggestion | None:
    """Micro-batching or gradient checkpointing, exactly when the run does not fit (or is tight)."""
    if est.memory.verdict == "fits" or ctx.impossible:
        return None
    options = [s for s in (_smaller_batch(spec, ctx), _checkpointing(spec, est, ctx)) if s is not None]
    if not options:
        return None
    best = min(options, key=lambda o: o[1])
    return best[0]


def _smaller_batch(spec: Spec, ctx: _Ctx) -> tuple[Suggestion, float] | None:
    t = spec.training
    per_gpu = t.micro_batch_size * t.grad_accum_steps
    for b in range(t.micro_batch_size - 1, 0, -1):
        if per_gpu % b:
            continue  # keep the global batch exactly
        if per_gpu // b > MAX_BATCH:
            break  # a smaller micro batch needs more accumulation than a spec may hold (spec.bounds)
        new = apply_changes(spec, {"training.micro_batch_size": b, "training.grad_accum_steps": per_gpu // b})
        est = ctx.estimate(new)
        if est is not None and est.memory.verdict == "fits":
            return Suggestion(
                setting="training.micro_batch_size", current=t.micro_batch_size, proposed=b,
                companions={"training.grad_accum_steps": per_gpu // b},
                rationale=f"Micro-batching is needed: at micro batch {t.micro_batch_size} the run needs "
                          f"more memory than the GPU has to spare; micro batch {b} with accumulation "
                          f"{per_gpu // b} keeps the global batch and costs no recomputation.",
                risks="Smaller kernels: slightly lower GPU efficiency per token.",
                monitor="Gradient norms and loss should track the old run: the global batch is the same."), est.hours
    return None


def _checkpointing(spec: Spec, est: Estimate, ctx: _Ctx) -> tuple[Suggestion, float] | None:
    if spec.training.gradient_checkpointing:
        return None
    new = apply_changes(spec, {"training.gradient_checkpointing": True})
    after = ctx.estimate(new)
    if after is None or after.memory.verdict != "fits":
        return None
    acts = est.memory.breakdown_gib.get("activations", 0.0)
    return Suggestion(
        setting="training.gradient_checkpointing", current=False, proposed=True,
        rationale=f"Gradient checkpointing is needed: activations take {acts:.1f} GiB per GPU; keeping "
                  "only each layer's input and recomputing the rest in the backward pass fits.",
        risks="One extra forward pass: about 20-35 % more compute.",
        monitor="Peak memory and step time in the first steps."), after.hours


def _raise_batch(spec: Spec, est: Estimate, ctx: _Ctx) -> Suggestion | None:
    """Raise the micro batch while memory fits, lowering accumulation to keep the global batch."""
    t = spec.training
    best = None
    for factor in (2, 4, 8):
        b, accum = t.micro_batch_size * factor, t.grad_accum_steps // factor
        if accum < 1 or t.grad_accum_steps % factor or b > MAX_BATCH:
            break
        new = apply_changes(spec, {"training.micro_batch_size": b, "training.grad_accum_steps": accum})
        after = ctx.estimate(new)
        if after is None or after.memory.verdict != "fits":
            break
        best = (b, accum, after)
    if best is None:
        return None
    b, accum, after = best
    return Suggestion(
        setting="training.micro_batch_size", current=t.micro_batch_size, proposed=b,
        companions={"training.grad_accum_steps": accum},
        rationale=f"Memory allows micro batch {b} ({after.memory.peak_gib:.1f} GiB per GPU); with "
                  f"accumulation {accum} the global batch stays the same and each step launches fewer, "
                  "larger kernels. Our model credits no speed-up once a micro batch holds thousands of "
                  "tokens: measure it with the mini-run.",
        risks="Less memory headroom for the longest batches.",
        monitor="Gradient norms after the change; loss should track the old run (same global batch).")


def _compile(spec: Spec, est: Estimate, ctx: _Ctx) -> Suggestion | None:
    """torch.compile in the mode our estimate makes fastest: every mode is credited the same speed-up,
    so the one with the shortest compilation (default) wins; the others' cost is said."""
    if spec.training.compile:
        return None
    gain, warmup = ASSUMPTIONS["compile"], COMPILE_WARMUP_MINUTES
    hours = {mode: e.hours for mode in warmup
             if (e := ctx.estimate(apply_changes(spec, {"training.compile": True, "training.compile_mode": mode})))}
    mode = min(hours, key=lambda m: (hours[m], m != "default")) if hours else "default"
    return Suggestion(
        setting="training.compile", current=False, proposed=True, companions={"training.compile_mode": mode},
        rationale=f"torch.compile fuses the elementwise chains around the matmuls; about {gain - 1:.0%} "
                  f"more tokens/s in published fine-tuning benchmarks, after about {warmup[mode]:g} min of "
                  f"compilation (counted in our hours). Mode {mode}: max-autotune also benchmarks matmul "
                  f"kernels (about {warmup['max-autotune']:g} min) and reduce-overhead records CUDA graphs "
                  f"(about {warmup['reduce-overhead']:g} min), for a speed-up no published fine-tuning "
                  "benchmark credits them with at these matmul sizes.",
        risks="Minutes of compilation at start; recompilation when sequence lengths vary (pad to "
              "a few fixed lengths or pack the dataset).",
        monitor="Step time after warm-up and the number of recompilations.")


def _impossible(spec: Spec, est: Estimate, ctx: _Ctx) -> Suggestion | None:
    """Only when even micro batch 1 with checkpointing cannot fit: load the base in 4 bit (QLoRA).

    Never sharding: tunegate's trainer runs no ZeRO or FSDP (the spec stage's TG160), and more GPUs
    without sharding each hold the whole base, so they do not help either.
    """
    if not ctx.impossible or spec.model.quantization == "4bit":
        return None
    changes = {"model.quantization": "4bit", "training.gradient_checkpointing": True}
    after = ctx.estimate(apply_changes(spec, changes))
    if after is None or after.memory.verdict == "does not fit":
        return None
    main = changes.pop("model.quantization")
    return Suggestion(
        setting="model.quantization", current=spec.model.quantization, proposed=main, companions=changes,
        rationale=f"The job cannot fit on {spec.hardware.count} x {spec.hardware.gpu} even at micro batch 1 "
                  f"with gradient checkpointing; the base in NF4 (QLoRA) fits ({after.memory.peak_gib:.1f} "
                  "GiB per GPU).",
        risks="NF4 rounds the frozen weights: quality can drop slightly; dequantising costs step time. "
              "Needs bitsandbytes and a CUDA GPU (pip install 'tunegate[qlora]').",
        monitor="Validation loss against a 16-bit run on a subset; step time.")


RULES: list[Rule] = [_precision, _impossible, _memory, _attention, _raise_batch, _compile]


def advise_with_rules(spec: Spec, facts: GateFacts | None = None, base_dir: Path | None = None,
                      trainer: Trainer = TRAINERS["tunegate"]) -> tuple[Advice, Spec]:
    """The rule engine's advice and the spec with every verified suggestion applied.

    A new-hardware suggestion (a physically impossible run) is an alternative: verified against the
    spec as written, listed last, and not applied to the returned spec.

    Raises:
        EstimateError: the run cannot be estimated (no model config, unknown GPU).
    """
    ctx = _Ctx(facts or GateFacts(), base_dir, impossible=not fits_at_minimum(spec, base_dir), trainer=trainer)
    before = estimate_run(spec, ctx.facts, base_dir)
    current, current_est, out = spec, before, []
    for rule in RULES:
        suggestion = rule(current, current_est, ctx)
        if suggestion is None:
            continue
        checked, new_spec = verify(suggestion, current, ctx.facts, base_dir, ctx.impossible, trainer)
        if not checked.verified and (checked.rejected_reason or "").startswith(NO_GAIN):
            continue  # our own estimate says it does not pay: not advice
        out.append(checked)
        if new_spec is not None:
            current, current_est = new_spec, estimate_run(new_spec, ctx.facts, base_dir)
    alternative = smallest_fit(spec, ctx.estimate) if ctx.impossible else None
    if alternative is not None:
        out.append(verify(alternative, spec, ctx.facts, base_dir, True, trainer)[0])
    found = readings(spec, ctx.facts, base_dir, first=before)
    advice = Advice(source="rules", suggestions=out, hours_before=_hours(before.hours),
                    readings=[r.model_dump() for r in found],
                    hours_after=_hours(current_est.hours), peak_gib_before=before.memory.peak_gib,
                    peak_gib_after=current_est.memory.peak_gib, notes=_sample_notes(before))
    return advice.model_copy(update={"summary": headline(advice, spec, before)}), current


def _sample_notes(est: Estimate) -> list[str]:
    """The hours rest on characters counted from a sample of a large training file: say so, and how well."""
    sample = est.tokens.sample
    return [] if sample is None else [f"training tokens from characters {sample.statement()}"]


def _hours(hours: float) -> float:
    return float(f"{hours:.4g}")  # 4 significant digits: 335.8, and 0.0004 is not rounded to 0


def headline(advice: Advice, spec: Spec, before: Estimate) -> str:
    """Our summary: the verified changes, predicted hours and memory before and after; new hardware apart."""
    verified = [s for s in advice.verified() if not s.new_hardware]
    where = f"on {spec.hardware.count} x {spec.hardware.gpu}"
    text = (f"{len(verified)} verified change(s): {fmt_hours(advice.hours_before)} -> "
            f"{fmt_hours(advice.hours_after)}, peak {advice.peak_gib_before:.1f} -> {advice.peak_gib_after:.1f} "
            f"GiB per GPU {where} (our estimate)")
    if before.memory.verdict != "fits":
        text += f"; the current settings {'do not fit' if before.memory.verdict == 'does not fit' else 'barely fit'} " \
                "in GPU memory, so the memory fixes come first"
    for s in advice.verified():
        if s.new_hardware:
            text += (f"; new hardware, as the run is physically impossible on the declared GPUs: it fits on "
                     f"{hardware_of(s, spec)} ({fmt_hours(s.predicted_hours or 0.0)} there, our estimate)")
    return text


def hardware_of(s: Suggestion, spec: Spec) -> str:
    """'4 x H200': the GPUs a new-hardware suggestion asks for."""
    changes = s.changes()
    return f"{changes.get('hardware.count', spec.hardware.count)} x {changes.get('hardware.gpu', spec.hardware.gpu)}"
