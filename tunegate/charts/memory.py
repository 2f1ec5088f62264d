"""The estimate's memory per GPU as one stacked bar, against the GPU's usable memory.

The estimate's terms are grouped the way a person reasons about them: the weights (with autocast's
copies, ZeRO-3's gathered layers, QLoRA's dequantised matrix), the adapters (with the trained copies
of modules_to_save), what the optimizer keeps (gradients, its states, an fp32 master copy, DDP's
buckets), activations, logits, and the reserve nobody can use (the allocator's, the CUDA context).
A term this version does not know is drawn as "other", never dropped: the bar always adds up to
the estimate's peak.
"""
from __future__ import annotations

from typing import Any

from tunegate.charts.svg import Canvas, text_width, ticks

GROUPS = {  # every term of tunegate.estimate.memory (tests/charts/test_memory.py enumerates them)
    "weights": "weights", "autocast_weight_copies": "weights", "gathered_layer": "weights",
    "gathered_root": "weights", "dequant_buffer": "weights",
    "lora_weights": "adapters", "saved_modules": "adapters",
    "gradients": "optimizer", "optimizer_states": "optimizer", "master_weights": "optimizer",
    "optimizer_temporaries": "optimizer", "ddp_buckets": "optimizer",
    "activations": "activations", "logits": "logits",
    "allocator_reserve": "reserve", "cuda_context": "reserve",
}
ORDER = ["weights", "adapters", "optimizer", "activations", "logits", "reserve", "other"]
COLOURS = {"weights": "#4C72B0", "adapters": "#55A868", "optimizer": "#8172B2", "activations": "#DD8452",
           "logits": "#C44E52", "reserve": "#937860", "other": "#8C8C8C"}
VERDICT_COLOURS = {"fits": "#2E7D32", "tight": "#F9A825", "does not fit": "#C62828"}


def grouped(breakdown: dict[str, float]) -> dict[str, float]:
    """GiB per group, in ORDER, groups with nothing left out."""
    sums: dict[str, float] = {}
    for term, gib in breakdown.items():
        group = GROUPS.get(term, "other")
        sums[group] = sums.get(group, 0.0) + float(gib)
    return {g: sums[g] for g in ORDER if sums.get(g)}


def memory_svg(memory: dict[str, Any], title: str) -> bytes | None:
    """SVG of `memory` (the estimate's `memory` summary: breakdown, peak_gib, capacity_gib, verdict)."""
    breakdown = memory.get("breakdown") or {}
    capacity = memory.get("capacity_gib")
    if not breakdown or not capacity:
        return None
    groups = grouped(breakdown)
    total = sum(groups.values())
    x_range = (0.0, max(total, capacity) * 1.15)
    x_ticks = ticks(*x_range)
    canvas = Canvas(800, 240)
    plot = canvas.plot(x_range, (-0.6, 0.9), (20, 32, canvas.width - 20, canvas.height - 45))
    plot.axes(x_label="GiB per GPU", x_ticks=x_ticks)
    left = 0.0
    for name, gib in groups.items():
        plot.rect(left, -0.4, left + gib, 0.4, COLOURS[name])
        left += gib
    plot.vline(capacity, "black", width=2)
    label = f" GPU memory {capacity:g} GiB "
    fits_right = plot.px(capacity) + text_width(label, 9) <= plot.box[2]
    plot.text(capacity, 0.45, label, size=9, anchor="start" if fits_right else "end")
    columns = min(len(groups), 4)
    canvas.legend([(COLOURS[name], f"{name} {gib:.1f}") for name, gib in groups.items()],
                  plot.box[0] + 6, plot.box[1] + 6, columns=columns)
    verdict = memory.get("verdict", "")
    peak = memory.get("peak_gib", total)
    canvas.title(f"{title}: peak {peak:.1f} of {capacity:g} GiB ({verdict})", VERDICT_COLOURS.get(verdict, "black"))
    return canvas.svg()
