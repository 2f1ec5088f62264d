"""The estimate's memory per GPU as one stacked bar, against the GPU's usable memory.

The estimate's terms are grouped the way a person reasons about them: the frozen weights, the
adapter, what the optimizer keeps (gradients, its states, DDP's buckets), activations, logits,
and the reserve nobody can use (allocator fragmentation, the CUDA context). A term this version
does not know is drawn as "other", never dropped: the bar always adds up to the estimate's peak.
"""
from __future__ import annotations

from typing import Any

from tunegate.charts.canvas import figure, png

GROUPS = {
    "weights": "weights", "lora_weights": "adapters", "gradients": "optimizer", "optimizer_states": "optimizer",
    "ddp_buckets": "optimizer", "activations": "activations", "logits": "logits",
    "fragmentation": "reserve", "cuda_context": "reserve",
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


def memory_png(memory: dict[str, Any], title: str) -> bytes | None:
    """PNG of `memory` (the estimate's `memory` summary: breakdown, peak_gib, capacity_gib, verdict)."""
    breakdown = memory.get("breakdown") or {}
    capacity = memory.get("capacity_gib")
    if not breakdown or not capacity:
        return None
    groups = grouped(breakdown)
    fig = figure(8, 2.4)
    ax = fig.subplots()
    left = 0.0
    for name, gib in groups.items():
        ax.barh([0], [gib], left=left, color=COLOURS[name], label=f"{name} {gib:.1f}")
        left += gib
    verdict = memory.get("verdict", "")
    ax.axvline(capacity, color="black", linewidth=2)
    ax.text(capacity, 0.45, f" GPU memory {capacity:g} GiB", va="bottom", fontsize=8)
    ax.set_xlim(0, max(left, capacity) * 1.15)
    ax.set_ylim(-0.6, 0.9)
    ax.set_yticks([])
    ax.set_xlabel("GiB per GPU")
    peak = memory.get("peak_gib", left)
    ax.set_title(f"{title}: peak {peak:.1f} of {capacity:g} GiB ({verdict})", fontsize=10,
                 color=VERDICT_COLOURS.get(verdict, "black"))
    ax.legend(ncol=min(len(groups), 4), fontsize=7, loc="upper left", frameon=False)
    return png(fig)
