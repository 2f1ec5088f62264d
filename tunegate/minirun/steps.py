"""The mini-run's optimizer steps and evaluation step, with a health check on every step.

A handful of steps of the full run's optimizer with the spec's learning rate, micro batch and gradient accumulation.
Every step's loss must be finite, its gradient norm finite and non-zero, and the first step must
change the LoRA weights. The first micro batch is scored in eval mode before and after training:
the loop keeps revisiting it, so its loss going down shows that learning reaches the labels.
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any

from tunegate import progress
from tunegate.minirun.profile_split import StepProfiler, data_range, optimizer_range
from tunegate.report import FindingCollector
from tunegate.spec.model import Spec
from tunegate.training.device import RunPlace
from tunegate.minirun.update_ratio import MAX_UPDATE_RATIO, largest, update_ratios
from tunegate.training.model import lora_parameters
from tunegate.training.optimizers import build_optimizer

# The HF Trainer's default max_grad_norm; the full run clips at the same value, so the mini-run
# does too (and reports the norm before clipping, which is what explodes).
MAX_GRAD_NORM = 1.0


@dataclass
class StepLog:
    step: int  # 1-based optimizer step
    loss: float  # mean of the micro-batch losses of this step
    grad_norm: float  # before clipping
    seconds: float
    tokens: int  # non-padding tokens processed
    skipped: bool = False  # fp16: the loss scaler skipped this step (inf/NaN gradients)


@dataclass
class TrainOutcome:
    steps: list[StepLog] = field(default_factory=list)
    probe_before: float | None = None
    probe_after: float | None = None
    probe_logits: Any = None  # logits of the probe batch after training, float32 on the CPU
    healthy: bool = True  # False once a step went non-finite: later checks would be meaningless
    update_ratio: tuple[str, float] | None = None  # the module whose LoRA update is largest against its weight


def autocast(place: RunPlace) -> Any:
    import torch

    return torch.autocast(device_type=place.device, dtype=place.dtype, enabled=place.precision != "fp32")


def to_device(batch: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: v.to(device) for k, v in batch.items()}


def train_steps(model: Any, batches: list[dict[str, Any]], spec: Spec, place: RunPlace,
                out: FindingCollector, profiler: StepProfiler | None = None) -> TrainOutcome:
    """Run gate.mini_run.steps optimizer steps, cycling over `batches`, and check each one.

    With a profiler, every step after the first runs under torch.profiler (the split of its time).
    """
    import torch

    params = lora_parameters(model)
    optimizer, stand_in = build_optimizer(model, spec)  # the full run's own (the HF Trainer's table)
    if stand_in:
        out.add("TG549", "info", f"training.optimizer {spec.training.optimizer} cannot be built here ({stand_in}): "
                "the mini-run stepped with torch's AdamW, so the full run's optimizer first runs on the run machine",
                "Nothing to fix in the config: a mini-run on the run machine (bitsandbytes installed, a CUDA "
                "GPU) exercises it.", key="training.optimizer")
    scaler = torch.amp.GradScaler(place.device) if place.precision == "fp16" else None
    result = TrainOutcome()
    result.probe_before = probe_loss(model, batches[0], place)
    before = {n: p.detach().clone() for n, p in params.items()}
    accum = spec.training.grad_accum_steps
    compared = False
    for step in range(1, spec.gate.mini_run.steps + 1):
        micro = [batches[((step - 1) * accum + i) % len(batches)] for i in range(accum)]
        with profiler.step(step) if profiler is not None else contextlib.nullcontext():
            log = _one_step(model, micro, optimizer, scaler, params, place, step)
        result.steps.append(log)
        progress.note(f"step {step}/{spec.gate.mini_run.steps} loss {log.loss:.4f}")
        if not _step_healthy(log, scaler is not None, out):
            result.healthy = False
            return result
        if not compared and not log.skipped:  # fp16's scaler may skip the first steps: that is normal
            _check_weights_changed(before, params, out)
            compared = True
    del before
    _check_all_skipped(result.steps, out)
    result.update_ratio = largest(update_ratios(model))
    if not _update_in_scale(result, out):
        result.healthy = False
        return result
    result.probe_after, result.probe_logits = probe_loss(model, batches[0], place, keep_logits=True)
    _check_loss_went_down(result, out)
    return result


def _one_step(model: Any, micro: list[dict[str, Any]], optimizer: Any, scaler: Any,
              params: dict[str, Any], place: RunPlace, step: int) -> StepLog:
    import torch

    model.train()
    start = time.perf_counter()
    losses, tokens = [], 0
    for batch in micro:
        with data_range():
            batch = to_device(batch, place.device)
        with autocast(place):
            loss = model(**batch).loss
        losses.append(loss.detach().float())
        scaled = loss / len(micro)  # accumulate the mean, as the HF Trainer does
        (scaler.scale(scaled) if scaler else scaled).backward()
        tokens += _tokens(batch)
    with optimizer_range():
        grad_norm, skipped = _clip_and_step(optimizer, scaler, params)
    optimizer.zero_grad(set_to_none=True)
    mean_loss = float(torch.stack(losses).mean())  # .item() syncs the device, so the time is real
    return StepLog(step, mean_loss, grad_norm, time.perf_counter() - start, tokens, skipped)


def _tokens(batch: dict[str, Any]) -> int:
    """Non-padding tokens; packed rows carry no attention mask, and their padding (the slack of
    rows shorter than the widest) is counted with them."""
    mask = batch.get("attention_mask")
    return int(mask.sum()) if mask is not None else int(batch["input_ids"].numel())


def _clip_and_step(optimizer: Any, scaler: Any, params: dict[str, Any]) -> tuple[float, bool]:
    """Clip the gradients and step (skipped on a non-finite norm); (norm before clipping, skipped)."""
    import torch

    if scaler:
        scaler.unscale_(optimizer)
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params.values(), MAX_GRAD_NORM))
    skipped = False
    if scaler:
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        skipped = scaler.get_scale() < scale  # the scaler backs off exactly when it skipped the step
    elif math.isfinite(grad_norm):
        optimizer.step()
    return grad_norm, skipped


def _step_healthy(log: StepLog, scaled: bool, out: FindingCollector) -> bool:
    where = {"key": "training.learning_rate"}
    if not math.isfinite(log.loss):
        out.add("TG516", "error", f"the training loss is {log.loss} at mini-run step {log.step}",
                "Lower training.learning_rate (LoRA: 1e-4 to 3e-4), use bf16 instead of fp16, and check "
                "the data for records with no trainable tokens.", **where)
        return False
    if not math.isfinite(log.grad_norm) and not scaled:
        out.add("TG517", "error", f"the gradient norm is {log.grad_norm} at mini-run step {log.step}",
                "Lower training.learning_rate; with fp16, switch to bf16 where the GPU has it.", **where)
        return False
    if log.grad_norm == 0.0:
        out.add("TG518", "error", f"the gradient norm is 0 at mini-run step {log.step}: nothing is learned",
                "Check that the labels are not all -100 and that the LoRA modules are in the loss's path "
                "(lora.target_modules).", key="lora.target_modules")
        return False
    return True


def _check_weights_changed(before: dict[str, Any], params: dict[str, Any], out: FindingCollector) -> None:
    import torch

    changed = sum(1 for n, p in params.items() if not torch.equal(before[n], p.detach()))
    if changed == 0:
        out.add("TG519", "error", f"no LoRA weight changed after the first optimizer step "
                f"({len(params)} trainable tensors)", "Check training.learning_rate and that the optimizer "
                "receives the LoRA parameters; with fp16 the loss scaler may be skipping every step.",
                key="training.learning_rate")


def _update_in_scale(result: TrainOutcome, out: FindingCollector) -> bool:
    """False (and TG535) when the LoRA update outgrew the weight it adapts: the rate is out of scale."""
    if result.update_ratio is None:
        return True
    module, ratio = result.update_ratio
    if ratio <= MAX_UPDATE_RATIO:
        return True
    out.add("TG535", "error", f"after {len(result.steps)} mini-run step(s) the LoRA update of {module} is "
            f"{ratio:.3g} times the weight it adapts (||ΔW|| / ||W||; a whole fine-tune ends near 0.1)",
            "Lower training.learning_rate (LoRA recipes use 1e-4 to 3e-4) or lora.alpha: at this scale "
            "the adapter overwrites the base model, whatever the loss shows.", key="training.learning_rate")
    return False


def _check_all_skipped(steps: list[StepLog], out: FindingCollector) -> None:
    if steps and all(s.skipped for s in steps):
        out.add("TG526", "error", f"the fp16 loss scaler skipped all {len(steps)} mini-run steps "
                "(their gradients overflowed)", "Use bf16 (training.precision: bf16) or lower "
                "training.learning_rate.", key="training.precision")


def _check_loss_went_down(result: TrainOutcome, out: FindingCollector) -> None:
    before, after = result.probe_before, result.probe_after
    if before is None or after is None or not math.isfinite(after) or after < before:
        return
    out.add("TG520", "warning", f"the loss on a batch trained on {len(result.steps)} times did not go down "
            f"({before:.4f} before, {after:.4f} after)", "A sign of a learning rate too low or too high, "
            "or of masking that hides the targets; check training.learning_rate.", key="training.learning_rate")


def probe_loss(model: Any, batch: dict[str, Any], place: RunPlace, keep_logits: bool = False) -> Any:
    """Loss (and optionally logits) of one batch in eval mode: no dropout, so runs are comparable."""
    import torch

    model.eval()
    with torch.no_grad(), autocast(place):
        output = model(**to_device(batch, place.device))
    loss = float(output.loss.float())
    if keep_logits:
        return loss, output.logits.float().cpu()
    return loss


def eval_step(model: Any, batch: dict[str, Any] | None, place: RunPlace, out: FindingCollector) -> float | None:
    """One evaluation step on a validation micro batch; its loss must be finite."""
    if batch is None:
        out.add("TG522", "error", "the validation set has no record usable for the evaluation step",
                "Fix the validation file's records (see the token audit findings above).", key="data.validation")
        return None
    loss = probe_loss(model, batch, place)
    if not math.isfinite(loss):
        out.add("TG521", "error", f"the evaluation loss is {loss} on a validation micro batch",
                "The model diverged or the validation records have no trainable tokens; see the "
                "findings above.", key="data.validation")
    return loss
