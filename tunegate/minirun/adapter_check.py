"""Reload the mini-run's saved adapter beside the trained one and compare; check checkpoint disk.

Users have shipped 443-byte adapters (huggingface/peft#286) and all-NaN adapters from runs that
"succeeded" (MakazhanAlpamys/Soup#532), and lost runs to a crash at the first save. So the
mini-run saves exactly as the full run will (`tunegate.training.adapter_io`), then checks here
that the adapter read back from disk holds the trained weights and computes the same logits.

The file is loaded as a second adapter of the model already in memory (PEFT's `load_adapter` and
`set_adapter`), on its device: a fresh base read from disk cost 16-29 s on a 1.5B proxy on an H200
and would re-read 16 GB for an 8B model or re-quantise a 70B QLoRA base (issue 31); the base's
frozen weights are the same either way (TG507 holds them frozen). What the file holds that the
model does not take, or lacks, is PEFT's own `load_result` (unexpected and missing keys).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tunegate.minirun.steps import probe_loss
from tunegate.report import FindingCollector
from tunegate.spec.model import Spec
from tunegate.training.adapter_io import SavedAdapter
from tunegate.training.device import RunPlace
from tunegate.training.model import load_tokenizer

# Largest |logit difference| accepted after reloading, relative to the largest |logit|: the same
# weights give the same logits up to kernel rounding, which is about 1e-2 relative in half precision.
LOGIT_TOLERANCE = {"fp32": 1e-4, "bf16": 2e-2, "fp16": 1e-2}
RELOADED = "tunegate-reloaded"  # the second adapter's name, removed again after the comparison


def reload_and_compare(saved: SavedAdapter, model: Any, spec: Spec, place: RunPlace,
                       probe_batch: dict[str, Any], probe_logits: Any, out: FindingCollector) -> dict[str, Any]:
    """Load the saved adapter into the trained model as a second adapter; compare keys, weights, logits
    and the tokenizer. The trained adapter is active again afterwards."""
    from peft import get_peft_model_state_dict

    _check_tokenizer(saved, spec, out)
    active = model.active_adapter
    result = model.load_adapter(str(saved.folder), adapter_name=RELOADED)
    try:
        _check_keys(result, out)
        reloaded = {k: v.detach().cpu() for k, v in get_peft_model_state_dict(model, adapter_name=RELOADED).items()}
        _compare_weights(saved.state, reloaded, out)
        model.set_adapter(RELOADED)
        _, logits = probe_loss(model, probe_batch, place, keep_logits=True)
    finally:
        model.set_adapter(active)
        model.delete_adapter(RELOADED)
    diff = float((logits - probe_logits).abs().max())
    scale = max(1.0, float(probe_logits.abs().max()))
    if not math.isfinite(diff) or diff > LOGIT_TOLERANCE[place.precision] * scale:
        out.add("TG523", "error", f"logits of the reloaded adapter differ from the trained model's by up to "
                f"{diff:.4g} (tolerance {LOGIT_TOLERANCE[place.precision] * scale:.4g})",
                "The adapter does not round-trip: check PEFT/transformers versions match between saving "
                "and loading, and that no module is modified outside LoRA.", key="lora")
    return {"reload_max_logit_diff": diff}


def _check_keys(result: Any, out: FindingCollector) -> None:
    """PEFT's own account of the load: adapter tensors the model lacks, or file tensors it cannot place."""
    missing = [k for k in getattr(result, "missing_keys", []) if RELOADED in k]
    unexpected = list(getattr(result, "unexpected_keys", []))
    if missing or unexpected:
        example = (missing or unexpected)[0]
        out.add("TG523", "error", f"reloading the adapter file left {len(missing)} adapter tensors missing and "
                f"{len(unexpected)} in the file unplaced (e.g. {example})",
                "The adapter does not round-trip; the full run's adapter would load wrong.", key="lora")


def _compare_weights(trained: dict[str, Any], reloaded: dict[str, Any], out: FindingCollector) -> None:
    import torch

    missing = sorted(set(trained) - set(reloaded))
    # each compared at the dtype the model holds it in: a modules_to_save copy trained in fp32 (fp16
    # runs, tunegate.training.model) is read back into the base's fp16, as any later load does
    differ = [k for k in trained if k in reloaded
              and not torch.equal(trained[k].to(reloaded[k].dtype).float(), reloaded[k].float())]
    if missing or differ:
        example = (missing or differ)[0]
        out.add("TG523", "error", f"after reloading, {len(missing)} adapter tensors are missing and "
                f"{len(differ)} differ from the trained ones (e.g. {example})",
                "The adapter does not round-trip; the full run's adapter would load wrong.", key="lora")


def _check_tokenizer(saved: SavedAdapter, spec: Spec, out: FindingCollector) -> None:
    reloaded = load_tokenizer(str(saved.folder), spec)
    if reloaded.chat_template != saved.chat_template:
        out.add("TG524", "error", "the tokenizer saved with the adapter lost its chat template "
                f"(had {len(saved.chat_template or '')} characters, reloaded has "
                f"{len(reloaded.chat_template or '')})", "Save the tokenizer with save_pretrained after "
                "setting chat_template, with the same transformers version that will load it.", key="model.id")


def check_checkpoint_disk(spec: Spec, adapter_bytes: int, trainable_params: int, train_records: int,
                          out: FindingCollector) -> dict[str, Any]:
    """Compare free space at full_run.output_dir with what the full run's checkpoints will take.

    Each checkpoint holds the adapter plus AdamW's two fp32 moments per trainable parameter; the HF
    Trainer keeps every checkpoint unless told otherwise, and the final adapter comes on top.
    """
    import shutil

    t = spec.training
    per_step = t.micro_batch_size * t.grad_accum_steps * spec.hardware.count
    steps = t.max_steps or math.ceil(train_records * (t.epochs or 1.0) / per_step)
    checkpoints = steps // spec.full_run.save_steps
    need = checkpoints * (adapter_bytes + 2 * 4 * trainable_params) + adapter_bytes  # + the final adapter
    folder = _existing_parent(spec.full_run.output_dir)
    free = shutil.disk_usage(folder).free
    if free < need:
        out.add("TG529", "error", f"{folder} has {free / 2**30:.2f} GiB free but the full run's {checkpoints} "
                f"checkpoints need about {need / 2**30:.2f} GiB", "Free disk space, point full_run.output_dir "
                "at a larger disk, or raise full_run.save_steps.", key="full_run.output_dir")
    return {"checkpoints": checkpoints, "checkpoint_bytes_estimate": need, "disk_free_bytes": free}


def _existing_parent(path: Path) -> Path:
    path = path.resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
