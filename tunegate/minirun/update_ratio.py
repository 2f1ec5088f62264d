"""How far the mini-run's steps moved the model: the LoRA update measured against the weight it adapts.

A finite loss does not prove a sane learning rate: on a small random model an absurd rate can
keep the loss finite while the adapter's update dwarfs the base weights (issue 11: learning rate
50 in fp32 passed). So after the mini-run's steps each adapted module's update
ΔW = (alpha / r) * B @ A is measured against its frozen weight W, in Frobenius norm:

    ratio = ||ΔW||_F / ||W||_F

Hu et al. (LoRA, 2021, section 7.3, table 7) measured, after a whole fine-tune of GPT-3 175B,
||W_q||_F = 61.95 against ||ΔW_q||_F = 6.91 (r = 4) and 3.57 (r = 64): a ratio of 0.06 to 0.11 at
the END of training. An update as large as the weight itself after a handful of steps is an order
of magnitude past that: the learning rate is out of scale, whatever the loss says. docs/checks.md
(TG535) has the measurements on the tiny model.

The norm of B @ A is computed from two r x r matrices, ||BA||_F^2 = sum((B^T B) * (A A^T)), so the
full out x in product is never formed (a 4096 x 4096 matrix per module on a real model).
"""
from __future__ import annotations

import math
from typing import Any

# ||ΔW|| / ||W|| above which the mini-run rejects the spec: the update is as large as the weight.
MAX_UPDATE_RATIO = 1.0


def update_ratios(model: Any) -> dict[str, float]:
    """Module name -> ||ΔW||_F / ||W||_F for every LoRA-adapted linear layer (a k-bit base dequantised)."""
    import torch

    ratios: dict[str, float] = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            lora_a, lora_b = getattr(module, "lora_A", None), getattr(module, "lora_B", None)
            base = getattr(module, "base_layer", None)
            base_norm = _weight_norm(getattr(base, "weight", None))
            if not lora_a or not lora_b or base_norm is None:
                continue
            for adapter in lora_a:
                a = lora_a[adapter].weight.float()
                b = lora_b[adapter].weight.float()
                scale = float(module.scaling[adapter])
                update_sq = float(((b.T @ b) * (a @ a.T)).sum())
                ratios[name] = _ratio(scale, update_sq, base_norm)
    return ratios


def _weight_norm(weight: Any) -> float | None:
    """||W||_F of a base weight: a float one as it is, a bitsandbytes 4-bit one dequantised (one layer
    at a time, so QLoRA is checked too: it was skipped, issue 31), an LLM.int8 one from its int8 rows
    and their scales; None for anything else."""
    if weight is None:
        return None
    if weight.is_floating_point():
        return float(weight.float().norm())
    state = getattr(weight, "quant_state", None)
    if state is not None:  # bitsandbytes Params4bit: NF4/FP4 codes and their block constants
        from bitsandbytes.functional import dequantize_4bit

        return float(dequantize_4bit(weight.data, state).float().norm())
    rows, scales = getattr(weight, "CB", None), getattr(weight, "SCB", None)
    if rows is not None and scales is not None:  # bitsandbytes Int8Params: W = CB * SCB / 127, row-wise
        return float((rows.float() * scales.float().unsqueeze(1) / 127.0).norm())
    return None


def _ratio(scale: float, update_sq: float, base_norm: float) -> float:
    if not math.isfinite(update_sq):
        return math.inf
    if base_norm == 0.0:
        return math.inf if update_sq > 0 else 0.0
    return abs(scale) * math.sqrt(max(update_sq, 0.0)) / base_norm


def largest(ratios: dict[str, float]) -> tuple[str, float] | None:
    """The module with the largest ratio, or None when nothing was measured."""
    if not ratios:
        return None
    name = max(ratios, key=lambda n: ratios[n])
    return name, ratios[name]
