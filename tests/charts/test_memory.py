"""The estimate's memory per GPU: one stacked bar of its terms, grouped, against the GPU's memory."""
from __future__ import annotations

import pytest

from tests.support.svg import Drawn
from tunegate.charts.memory import COLOURS, GROUPS, VERDICT_COLOURS, grouped, memory_svg

MEMORY = {"breakdown": {"weights": 14.9, "lora_weights": 0.1, "gradients": 0.1, "optimizer_states": 0.3,
                        "activations": 12.0, "logits": 3.2, "allocator_reserve": 2.0, "cuda_context": 0.5,
                        "a_term_from_later": 0.4},
          "capacity_gib": 79.1, "peak_gib": 33.5, "verdict": "fits"}


def test_the_bar_holds_every_term_grouped_and_adds_up_to_the_peak():
    assert grouped(MEMORY["breakdown"]) == pytest.approx({"weights": 14.9, "adapters": 0.1, "optimizer": 0.4,
                                                          "activations": 12.0, "logits": 3.2, "reserve": 2.5,
                                                          "other": 0.4})
    assert sum(grouped(MEMORY["breakdown"]).values()) == pytest.approx(33.5)


def test_each_group_is_a_segment_with_its_legend_entry_and_the_gpu_memory_is_a_line():
    drawn = Drawn(memory_svg(MEMORY, "model on 1 x H100"))
    segments = [f for f in drawn.fills("rect") if f in COLOURS.values()]
    assert segments == [COLOURS[g] for g in grouped(MEMORY["breakdown"])] * 2  # the bar, then the legend
    assert "weights 14.9" in drawn.texts() and " GPU memory 79.1 GiB " in drawn.texts()
    title = [t for t in drawn.marks("text") if t.text.startswith("model on 1 x H100: peak 33.5 of 79.1 GiB (fits)")]
    assert [t.get("fill") for t in title] == [VERDICT_COLOURS["fits"]]


def test_without_a_breakdown_or_a_capacity_there_is_no_chart():
    assert memory_svg({**MEMORY, "breakdown": {}}, "t") is None
    assert memory_svg({**MEMORY, "capacity_gib": None}, "t") is None


def test_every_term_the_estimate_can_break_memory_into_has_its_group():
    # Found: the estimate's `allocator_reserve` (once `fragmentation`) was drawn as "other".
    import itertools

    from tunegate.estimate.families import load_architecture
    from tunegate.estimate.memory import estimate_memory
    from tunegate.estimate.setup import TrainSetup
    from tunegate.spec.gpus import lookup

    arch, gpu, terms = load_architecture("meta-llama/Llama-3.2-1B"), lookup("A100-80GB"), set()
    for method, (count, sharding), impl, saved in itertools.product(
            ("lora", "qlora", "full"), ((1, "none"), (2, "none"), (4, "zero2"), (4, "zero3")), ("fused", "foreach"),
            (0, 1_000_000)):
        setup = TrainSetup(method=method, gpu_count=count, sharding=sharding, optimizer_impl=impl,
                           saved_module_params=saved if method != "full" else 0)
        terms |= set(estimate_memory(arch, setup, gpu).breakdown_gib)
    assert {"allocator_reserve", "saved_modules", "master_weights", "gathered_layer", "dequant_buffer"} <= terms
    assert terms <= set(GROUPS)
