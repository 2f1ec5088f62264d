"""Stage 3: will the full run fit, how long will it take, and is the user's own estimate plausible?

Run: `tunegate check SPEC` (the gate) or `tunegate estimate SPEC` (this stage alone, in detail).
Imports neither torch nor transformers: the model's config.json is enough.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from tunegate.errors import EstimateError
from tunegate.estimate import calibration
from tunegate.estimate.memory import estimate_memory
from tunegate.estimate.readings import METHOD_NAMES, OPTIMISTIC_MFU, Reading, summary_with_readings
from tunegate.estimate.run import Estimate, estimate_run, resolve_architecture, resolve_gpu
from tunegate.estimate.setup import setup_from_spec
from tunegate.facts import GateFacts
from tunegate.report import LAUNCH, FindingCollector, StageResult
from tunegate.spec.checkpoint import Stored
from tunegate.spec.model_classes import asked_for, attention_support
from tunegate.spec.remote_code import UNPINNED_REMOTE_CODE, remote_code_finding
from tunegate.spec.run_machine import RUN_MACHINE, stored_loader_missing
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

STAGE = "estimate"

_FIXES = {
    "activations": "Turn on training.gradient_checkpointing (about 33 % more compute) or lower "
                   "training.micro_batch_size and raise grad_accum_steps to keep the global batch.",
    "logits": "Lower training.micro_batch_size (raise grad_accum_steps to keep the global batch) or "
              "training.max_seq_len: the logits are batch x seq x vocab values in fp32.",
    "weights": "Load the base in 4 bit (model.quantization: 4bit, QLoRA) or use GPUs with more memory "
               "(tunegate's trainer does not shard: TG160).",
    "optimizer_states": "Keep the optimizer states in bf16 (training.master_weights: none) or train LoRA "
                        "adapters (training.method: lora); tunegate's trainer does not shard them (TG160).",
}
_FIXES["gradients"] = _FIXES["master_weights"] = _FIXES["optimizer_states"]
_FIXES["autocast_weight_copies"] = _FIXES["optimizer_states"]


def run_stage(ctx: GateContext) -> StageResult:
    """Run the estimate on `ctx.spec`, put its summary in `ctx.facts.estimate`, report findings."""
    start = time.perf_counter()
    out = FindingCollector(STAGE, ctx.cap)
    spec: Spec = ctx.spec
    file, base = ctx.spec_file, ctx.base_dir
    try:
        est = estimate_run(spec, ctx.facts, base, data_available="train" not in ctx.unavailable)
    except EstimateError as exc:
        return _not_estimated(out, exc, file, time.perf_counter() - start)
    summary = summary_with_readings(spec, est, ctx.facts, base)
    found = [Reading.model_validate(r) for r in summary["readings"]]
    ctx.facts.estimate = summary
    _assumed_gpu(out, est, spec, file)
    unjudged = _memory_findings(out, est, spec, file, base, ctx.memory_savers, ctx.trainer)
    _trainer_findings(out, est, spec, file, own=ctx.trainer == LAUNCH)
    _context_findings(out, est, spec, file)
    _base_config_finding(out, est, spec, file)
    _attention_findings(out, est, spec, file)
    _target_findings(out, est, spec, file)
    _batch_findings(out, est, spec, ctx.facts, file)
    if est.tokens.source != "none":  # no hours without tokens: a stated time has nothing to be judged by
        _claim_findings(out, found[0], est, file)
        for other in found[1:]:
            _other_reading_finding(out, other, file)
    else:
        out.add("TG425", "info", f"hours not estimated: the training data cannot be had here "
                f"({' and '.join(ctx.unavailable)}: the dataset stage says why), so the number of training tokens "
                "is unknown; memory per GPU and tokens/s do not depend on it", "Set estimate.dataset_tokens to the "
                "training set's size in tokens for the hours and the cost, or check local copies of the data "
                "(--train FILE --validation FILE).", file=file, key="estimate.dataset_tokens")
    if est.tokens.source == "characters":
        out.add("TG409", "info", f"training tokens estimated from characters: {est.tokens.tokens:,} "
                f"(characters / 4) in {spec.data.names('train')}{est.tokens.sample_statement()}",
                "Set estimate.dataset_tokens, or run the mini-run's token audit, for an exact count.",
                file=file, key="estimate.dataset_tokens")
    stats = {"summary": _summary_line(est), **summary}
    result = out.result(time.perf_counter() - start, stats)
    if unjudged:  # not approved, and no reason the config's trainer refuses it (as TG404)
        return result.model_copy(update={"status": "skipped", "reason": "the memory estimate does not model "
                                         "settings of the config that lower it, and does not fit without them (TG429)"})
    return result


# transformers 5 fuses a mixture of experts' experts into 3-D parameters, which bitsandbytes skips
_UNQUANTISED_EXPERTS = (" The experts of this mixture of experts stay in 16 bit under model.quantization with "
                        "transformers 5 (fused 3-D parameters, which bitsandbytes does not quantise: its issue "
                        "#1849); transformers 4 (pip install 'transformers<5') quantises them with the rest.")


def _assumed_gpu(out: FindingCollector, est: Estimate, spec: Spec, file: str | None) -> None:
    """TG426: nothing named the GPU (an axolotl or TRL config never does; a spec may leave hardware.gpu
    out), so the figures are for the catalog's default, which the user should see and may change."""
    hw = spec.hardware
    if "gpu" in hw.model_fields_set or hw.custom is not None:
        return
    out.add("TG426", "info", f"no GPU is named (hardware.gpu, --gpu), so the estimate assumes {est.gpu_count} x "
            f"{est.gpu} ({est.memory.capacity_gib:g} GiB each): its memory verdict and hours are for that GPU",
            "Name the GPU the run trains on: --gpu NAME (and --gpus N) on check, estimate, advise and samples, or "
            "hardware.gpu in a spec; `tunegate gpus` lists the names.", file=file, key="hardware.gpu")


def _not_estimated(out: FindingCollector, exc: EstimateError, file: str | None, duration_s: float) -> StageResult:
    """Without an estimate nothing may be approved for a full run. What this machine lacks (the model's
    config.json where the Hub cannot be reached) is no reason the config's trainer refuses it, which
    finds the config on the run machine: the stage did not run here (the report's `not_run`), said
    by a warning; anything else that stops the estimate is an error of the config."""
    out.add(exc.code, "warning" if exc.not_here else "error", str(exc), exc.hint, file=file, key=exc.key)
    result = out.result(duration_s, {"summary": "not estimated"})
    if not exc.not_here:
        return result
    return result.model_copy(update={"status": "skipped",
                                     "reason": f"the model's config.json is not on this machine ({exc.code})"})


def _memory_findings(out: FindingCollector, est: Estimate, spec: Spec, file: str | None,
                     base: Path | None, savers: list[str], trainer: str) -> bool:
    """The memory verdict's findings; True when it was not judged (TG429): the run does not fit as estimated,
    but the config sets what lowers the memory and the estimate does not model (`savers`)."""
    m = est.memory
    where = _where(est)
    moe_in_16_bit = (spec.model.quantization != "none" and not est.setup.linear_experts
                     and est.active_params < m.total_params and m.biggest == "weights")
    extra = _UNQUANTISED_EXPERTS if moe_in_16_bit else ""
    sharded = sharded_fit(spec, est, base)
    if sharded is not None:
        out.add("TG428", "warning", *sharded, file=file, key="hardware.count")
        return False
    if m.verdict == "does not fit" and savers:
        out.add("TG429", "warning", *not_judged(est, savers, trainer), file=file, key="hardware.gpu")
        return True
    if m.verdict == "does not fit":
        if not fits_at_minimum(spec, base):
            out.add("TG403", "error", f"the run cannot fit on {est.gpu_count} x {est.gpu} even at "
                    f"micro batch 1 with gradient checkpointing ({where} now; biggest term: {m.biggest})",
                    "Use GPUs with more memory or load the base in 4 bit (model.quantization: 4bit, "
                    "QLoRA); tunegate's trainer does not shard (TG160)." + extra, file=file, key="hardware.gpu")
            return False
        out.add("TG401", "error", f"the run does not fit in GPU memory: {where}; biggest term: "
                f"{m.biggest} ({m.breakdown_gib[m.biggest]:.1f} GiB)",
                _FIXES.get(m.biggest, "Lower training.micro_batch_size or max_seq_len.") + extra,
                file=file, key="training.micro_batch_size")
    elif m.verdict == "tight":
        out.add("TG402", "warning", f"GPU memory is tight: {where}: the point estimate fits, the band's "
                f"upper bound does not, so a longer batch or allocator fragmentation may run out of "
                f"memory (biggest term: {m.biggest})",
                _FIXES.get(m.biggest, "Lower training.micro_batch_size."), file=file,
                key="training.micro_batch_size")
    return False


def _stored_loader_missing(out: FindingCollector, est: Estimate, spec: Spec, file: str | None) -> None:
    """TG161/TG162 (info) for a checkpoint stored quantised whose config came from the hub or its local
    cache: the spec stage checks local folders and shipped configs only (it never asks the hub), so
    here, once the estimate has read it, a loader this machine lacks is named as the spec stage names
    it: a requirement of the run machine, not a failure of the check."""
    bits = int(est.checkpoint_quantization.removesuffix("bit"))
    problem = stored_loader_missing(spec, Stored(est.checkpoint_quant_method, bits), est.config_source)
    if problem is not None:
        code, key, message, fix = problem
        out.add(code, "info", f"{message}: a requirement of the {RUN_MACHINE}, not of this check",
                f"Nothing to fix for this check. {fix}", file=file, key=key)


def _trainer_findings(out: FindingCollector, est: Estimate, spec: Spec, file: str | None, own: bool = True) -> None:
    """What tunegate's own mini-run and trainer cannot run: they train LoRA adapters on a 16-bit base
    or, from model.quantization, on a 4-bit (QLoRA) or 8-bit base; never every weight. A full
    fine-tune of an imported config (not `own`: its trainer is axolotl or trl sft) is said by the
    spec stage's TG144 warning; here it is only estimated."""
    method, quant = est.setup.method, spec.model.quantization
    stored = est.checkpoint_quantization
    if stored != "none" and stored != quant:
        trains = "QLoRA" if stored == "4bit" else "LoRA on an 8-bit base"
        out.add("TG413", "warning", f"'{spec.model.id}' is a checkpoint stored in {stored} "
                f"({est.checkpoint_quant_method}, its config.json's quantization_config), which transformers loads "
                f"as stored whatever model.quantization ({quant}) says: estimated as {trains}",
                f"Set model.quantization: {stored} to say what the run is, or point model.id at the 16-bit "
                "checkpoint for LoRA on a 16-bit base.", file=file, key="model.quantization")
        quant = stored
    if est.config_source.startswith("hub:"):  # the spec stage reads only configs on this disk
        if stored != "none":
            _stored_loader_missing(out, est, spec, file)
        said = remote_code_finding(spec, est.custom_code, est.config_source)
        if said is not None and said[0] == "error":
            out.add(UNPINNED_REMOTE_CODE, "error", said[1], said[2], file=file, key="model.trust_remote_code")
    if method == "full" and quant != "none":
        out.add("TG410", "error", f"training.method is full but model.quantization is {quant}: a quantized "
                "base cannot be trained", "Set model.quantization: none for full fine-tuning, or "
                "training.method: qlora to train adapters on the 4-bit base.", file=file, key="training.method")
    elif method == "full" and own:
        out.add("TG410", "error", "training.method full: the estimate above is for it, but tunegate's "
                "mini-run and full-run trainer train LoRA adapters only, so this run cannot be checked or "
                "approved here", "Run it with your own trainer using these figures, or set "
                "training.method: lora (or qlora) for tunegate to check and launch it.", file=file,
                key="training.method")
    elif spec.training.method == "qlora" and quant != "4bit":
        out.add("TG410", "error", f"training.method qlora, but model.quantization is {quant}: the estimate "
                "is for a 4-bit base, and tunegate's trainer loads the base as model.quantization says",
                "Set model.quantization: 4bit (QLoRA), or training.method: lora.", file=file,
                key="model.quantization")
    if est.count == "model.params":
        out.add("TG419", "warning", f"no config.json could be read for '{spec.model.id}': estimated from model.params "
                f"({spec.model.params:g} B) as a Llama-like decoder of that size, so its shapes are a guess and the "
                f"memory band is {calibration.UNKNOWN_ARCHITECTURE_WIDENING:.0%} wider",
                "Make the model's config.json readable (hf download ID config.json into a folder, or the HF cache) for "
                "an exact count; give model.hidden_size and model.num_layers from its model card meanwhile.",
                file=file, key="model.params")
    if est.count == "llama-style guess":
        # a guess is not a check: the memory and time above were never estimated for this architecture
        out.add("TG411", "error", f"cannot estimate '{spec.model.id}': its model_type '{est.model_type}' is "
                "one tunegate's config-only counter does not know and transformers could not count, so its "
                "memory was never checked (the figures shown read it as a Llama-style decoder: a guess) and "
                "the run cannot be approved",
                "Install transformers (pip install 'tunegate[train]') so the model is counted on its meta-device "
                "model; a model_type only the repo's own code builds (trust_remote_code) is beyond what tunegate "
                "can check.", file=file, key="model.id")


def _base_config_finding(out: FindingCollector, est: Estimate, spec: Spec, file: str | None) -> None:
    """TG427: the config.json of a chat-tuned release could not be had, so its base's shipped one was read."""
    if not est.config_source.startswith("shipped-base:"):
        return
    base = est.config_source.removeprefix("shipped-base:").removesuffix(".json").replace("--", "/")
    out.add("TG427", "info", f"no config.json for '{spec.model.id}' here (offline, not in the Hugging Face cache): "
            f"estimated with its base model's, '{base}' (shipped with tunegate), as a chat-tuned release keeps its "
            "base's architecture", "Nothing to fix for the estimate. For its own config (the mini-run and the run "
            f"load it anyway): `hf download {spec.model.id} config.json` where the Hub is reachable.",
            file=file, key="model.id")


def _context_findings(out: FindingCollector, est: Estimate, spec: Spec, file: str | None) -> None:
    """TG414: max_seq_len past the positions the model has (learned ones) or was trained for (rotary)."""
    length, most = spec.training.max_seq_len, est.max_positions
    if not most or length <= most or (est.long_context and not est.absolute_positions):
        return
    if est.absolute_positions:
        out.add("TG414", "error", f"training.max_seq_len {length} is past the {most} positions '{spec.model.id}' "
                "has: its position embeddings are learned, one per position, so a longer sequence has none and "
                "the forward pass fails (index out of range)", f"Set training.max_seq_len: {most} or less.",
                file=file, key="training.max_seq_len")
        return
    out.add("TG414", "warning", f"training.max_seq_len {length} is past the {most} positions '{spec.model.id}' "
            "was trained for, and its config sets no rope_scaling: tokens beyond them get rotary angles the "
            "model never saw, which degrades what it learns from long records (and what it can do with them)",
            f"Set training.max_seq_len: {most} or less, or start from a long-context variant of the model "
            "(one whose config.json has a rope_scaling).", file=file, key="training.max_seq_len")


def _attention_findings(out: FindingCollector, est: Estimate, spec: Spec, file: str | None) -> None:
    """TG417: an attention kernel the model class refuses; TG418: the default it falls back from."""
    support = attention_support(est.model_type)
    requested, hub = spec.training.attention, spec.model.hub_kernels
    if support is None or support.accepts(requested, hub):
        return
    others = " or ".join(k for k in support.accepted(hub) if k != requested)
    if asked_for(spec.training):
        out.add("TG417", "error", f"attention {requested} (training.attention): {support.refusal(requested)}, so "
                f"the base '{spec.model.id}' ({est.model_type}) fails to load at the start of the run",
                f"Use the {others} kernel instead (what {support.class_name} accepts in transformers "
                f"{support.transformers}).", file=file, key="training.attention")
        return
    used = est.setup.attention
    sized = " (eager keeps each layer's seq x seq attention scores)" if used == "eager" else ""
    out.add("TG418", "info", f"training.attention is not set and {support.class_name} does not support {requested}: "
            f"transformers {support.transformers} loads it with {used}, which the estimate sizes{sized}",
            f"Nothing to fix; name the kernel ({others}) to make the choice explicit.",
            file=file, key="training.attention")


def _target_findings(out: FindingCollector, est: Estimate, spec: Spec, file: str | None) -> None:
    """TG415: target names no module of the model has (where its module names are known exactly)."""
    missing = est.unmatched_targets
    if not missing:
        return
    matched = [t for t in spec.lora.target_modules if t not in missing]
    what = (f"PEFT adapts only the ones that match ({', '.join(matched)}), so the run trains a fraction of "
            "what was meant (the estimate counts LoRA on those alone)" if matched else
            "none of them matches, so PEFT stops the run (no target module found)")
    out.add("TG415", "error", f"lora.target_modules {missing} match no module of '{spec.model.id}' "
            f"({est.model_type}): {what}; its linear modules are {', '.join(est.linear_modules)}",
            f"Name the model's own modules in lora.target_modules ([{', '.join(est.linear_modules)}], or the "
            "ones you meant among them), or set it to all-linear.", file=file, key="lora.target_modules")


def _batch_findings(out: FindingCollector, est: Estimate, spec: Spec, facts: GateFacts, file: str | None) -> None:
    """TG416: a global batch above the training records, which makes every epoch one optimizer step.

    The HF Trainer takes `max(ceil(len(dataloader) / grad_accum), 1)` steps per epoch (transformers
    5; 4 counted `max(len // grad_accum, 1)` and stepped at each epoch's end too), so an epoch with
    fewer micro batches than grad_accum_steps is one step over every record: 3 epochs, 3 steps.
    Under max_steps it takes max_steps steps whatever the set's size (each then one pass over the
    records): no finding. Nor when estimate.dataset_tokens says the files are a sample of a larger set.
    """
    t, setup = spec.training, est.setup
    counted = facts.content.get("train")
    records = counted.records if counted is not None else est.tokens.records
    if t.max_steps or spec.estimate.dataset_tokens or not records or setup.global_batch <= records:
        return
    gpus = f" x {setup.gpu_count} GPUs" if setup.gpu_count > 1 else ""
    epochs = t.epochs or 1.0
    per_epoch = math.ceil(math.ceil(records / setup.gpu_count) / setup.micro_batch_size)  # at grad_accum_steps 1
    fix = (f"Lower training.grad_accum_steps (at 1, an epoch is {per_epoch} optimizer steps) or micro_batch_size"
           if per_epoch > 1 else "Lower training.micro_batch_size (one micro batch per GPU already holds its share "
           "of the records)")
    out.add("TG416", "warning", f"the global batch of {setup.global_batch} sequences (training.micro_batch_size "
            f"{setup.micro_batch_size} x grad_accum_steps {setup.grad_accum_steps}{gpus}) is larger than the "
            f"{records} records of {spec.data.names('train')}: each epoch is 1 optimizer step over all of them, so "
            f"{epochs:g} epoch(s) train {math.ceil(epochs)} step(s) in all",
            f"{fix} so that a step holds at most the {records} records, or add records.", file=file,
            key="training.grad_accum_steps")


def _where(est: Estimate) -> str:
    m = est.memory
    return (f"{m.peak_gib:.1f} GiB per GPU (band {m.low_gib:.1f}-{m.high_gib:.1f}) of the {est.gpu}'s "
            f"{m.capacity_gib:g} GiB")


SHARDED_COUNTS = (2, 4, 8, 16, 32, 64)  # GPU counts tried for a sharded run whose count is not given


def not_judged(est: Estimate, savers: list[str], trainer: str) -> tuple[str, str]:
    """TG429's message and fix: the run does not fit as estimated, but the config sets what lowers its memory
    and the estimate does not model (`savers`, tunegate.spec.importers.memory_savers), so no verdict."""
    m = est.memory
    return (f"memory not judged: as estimated the run does not fit ({_where(est)}; biggest term: {m.biggest}), but "
            f"the estimate does not model what the config sets to lower it: {'; '.join(savers)}. {trainer} applies "
            "them, so whether the run fits was not checked here", "Measure it on the GPU (a short run of the "
            "config's own trainer), or remove those settings to have the estimate judge the run.")


def sharded_fit(spec: Spec, est: Estimate, base: Path | None = None) -> tuple[str, str] | None:
    """TG428's message and fix, where a sharded run (ZeRO, FSDP) whose GPU count nothing gave does not fit
    on the one GPU the estimate assumed and does on the fewest of SHARDED_COUNTS (the band's top too:
    "tight" is not enough). An axolotl or LLaMA-Factory config never says the count (the launcher does:
    accelerate, torchrun, deepspeed). None where the count was given or is not what stops the run."""
    if est.memory.verdict != "does not fit" or spec.training.sharding == "none" \
            or "count" in spec.hardware.model_fields_set:
        return None
    verdict = _verdict_with(spec, base)
    enough = next((n for n in SHARDED_COUNTS if verdict(gpu_count=n) == "fits"), None) if verdict else None
    if enough is None:
        return None
    return (f"the run does not fit on {est.gpu_count} x {est.gpu} ({_where(est)}), but its "
            f"{spec.training.sharding} sharding spreads it over GPUs the config does not count: it fits on "
            f"{enough} x {est.gpu}", "Say how many GPUs the run gets to have it judged on them: --gpus N on check, "
            "estimate and advise (hardware.count in a spec).")


def fits_at_minimum(spec: Spec, base: Path | None = None) -> bool:
    """Whether the run fits at micro batch 1 with gradient checkpointing on the declared GPUs."""
    verdict = _verdict_with(spec, base)
    # nothing to judge by: never claim impossibility without a model
    return verdict is None or verdict(micro_batch_size=1, gradient_checkpointing=True) != "does not fit"


def _verdict_with(spec: Spec, base: Path | None) -> Callable[..., str] | None:
    """The memory verdict of the spec's run with some of its setup changed (keyword: new value), the
    model and GPU resolved once; None when either cannot be."""
    try:
        arch, gpu = resolve_architecture(spec, base), resolve_gpu(spec)
    except EstimateError:
        return None
    setup = setup_from_spec(spec, arch=arch)
    return lambda **change: estimate_memory(arch, setup.model_copy(update=change), gpu).verdict


def _claim_findings(out: FindingCollector, reading: Reading, est: Estimate, file: str | None) -> None:
    """TG406-TG408: a stated wall-clock time judged by the MFU it implies."""
    ours = f"our estimate is {est.hours:.1f} h at {est.throughput.mfu:.0%} MFU"
    for c in reading.claims:
        name = f"{c.key} {c.hours:g}"
        if c.verdict == "impossible":
            out.add("TG406", "warning", f"{name} is physically impossible: it needs {c.implied_mfu:.0%} of the "
                    f"GPUs' peak FLOP/s for {est.total_tokens:.3g} tokens as {METHOD_NAMES[reading.method]}; {ours}",
                    "Recheck the dataset size and epochs, or plan with our estimate.", file=file, key=c.key)
        elif c.verdict == "optimistic":
            out.add("TG407", "warning", f"{name} is optimistic: it implies {c.implied_mfu:.0%} MFU, above the "
                    f"~{OPTIMISTIC_MFU:.0%} well-tuned stacks reach; {ours}",
                    "Plan with a longer time, or measure tokens/s with the mini-run.", file=file, key=c.key)
        elif c.verdict == "suspiciously slow":
            out.add("TG408", "warning", f"{name} implies only {c.implied_mfu:.1%} MFU; something is probably "
                    f"misconfigured (CPU fallback, padding, a slow data loader); {ours}",
                    "Check that the run uses the GPU, bf16 and a fused attention kernel.", file=file, key=c.key)


def _other_reading_finding(out: FindingCollector, r: Reading, file: str | None) -> None:
    """TG412: what the run would be under the method the spec leaves open."""
    claims = "; ".join(f"{c.label} {c.hours:g} h needs {c.implied_mfu:.0%} MFU ({c.verdict})" for c in r.claims)
    fit = (f"{r.peak_gib:.0f} GiB per GPU of {r.capacity_gib:g} ({r.memory_verdict}"
           f"{', unsharded' if r.sharding == 'none' else ''})")
    out.add("TG412", "info", f"the spec does not set training.method: read as {METHOD_NAMES[r.method]}, the "
            f"run would take "
            f"{r.hours:,.0f} h by our estimate, memory {fit}" + (f"; {claims}" if claims else ""),
            f"Set training.method ({r.method} or lora) to say which run this is.", file=file, key="training.method")


def _summary_line(est: Estimate) -> str:
    m = est.memory
    cost = f", ${est.cost_usd:,.0f}" if est.cost_usd is not None else ""
    hours = "hours unknown" if est.tokens.source == "none" else f"{est.hours:,.1f} h"
    cost = "" if est.tokens.source == "none" else cost
    return (f"{m.peak_gib:.1f}/{m.capacity_gib:g} GiB per GPU ({m.verdict}), "
            f"{est.throughput.tokens_per_s:,.0f} tok/s per GPU, {hours} on "
            f"{est.gpu_count} x {est.gpu}{cost}")
