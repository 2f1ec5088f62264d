"""New hardware only where the run is physically impossible: the smallest catalog hardware that fits,
marked as new, and never applied to the advice for the declared GPUs."""
from __future__ import annotations

from tests.support.estimate_specs import DATA, make_spec
from tunegate.advisor.rules import advise_with_rules
from tunegate.advisor.targets import trainer_for
from tunegate.advisor.verify import apply_changes
from tunegate.estimate.run import estimate_run
from tunegate.spec import gpus

LLAMA_70B = {"id": str(DATA / "llama-70b")}


def new_hardware(advice):
    return [s for s in advice.suggestions if s.new_hardware]


def test_a_70b_lora_that_no_a100_can_hold_is_told_the_smallest_gpu_that_holds_it():
    advice, final = advise_with_rules(make_spec(model=LLAMA_70B, hardware={"gpu": "A100-80GB", "count": 1}))
    (s,) = new_hardware(advice)
    assert s.verified and s.purpose == "memory" and s.setting == "hardware.gpu" and s.current == "A100-80GB"
    assert "New hardware" in s.rationale and "new hardware" in advice.summary
    assert final.hardware.gpu == "A100-80GB" and final.model.quantization == "4bit"  # an alternative, not applied
    chosen = gpus.lookup(s.proposed)
    # every catalog GPU that holds less, with the same companions, does not fit the run
    smaller = [g for g in gpus.CATALOG.values() if 79.14 < g.memory_gib < chosen.memory_gib]
    assert smaller
    for gpu in smaller:
        trial = apply_changes(make_spec(model=LLAMA_70B), {**s.companions, "hardware.gpu": gpu.name})
        assert estimate_run(trial).memory.verdict != "fits", gpu.name


def test_a_sharded_run_may_be_told_to_add_gpus_of_its_own_type_keeping_the_global_batch():
    # Qwen3-30B-A3B fine-tuned in full (pure bf16) under ZeRO-3, as an axolotl config can run it
    spec = make_spec(model={"id": "Qwen/Qwen3-30B-A3B"},
                     training={"method": "full", "master_weights": "none", "sharding": "zero3",
                               "micro_batch_size": 1, "grad_accum_steps": 8, "gradient_checkpointing": True},
                     hardware={"gpu": "H200", "count": 1})
    advice, _ = advise_with_rules(spec, trainer=trainer_for("axolotl"))
    (s,) = new_hardware(advice)
    assert (s.setting, s.current, s.proposed) == ("hardware.count", 1, 2)
    assert s.companions == {"training.grad_accum_steps": 4} and not s.changes_global_batch and s.verified


def test_a_run_that_fits_at_micro_batch_1_is_never_offered_new_hardware():
    # micro batch 64 does not fit, but micro-batching makes it fit: the run is not impossible
    advice, _ = advise_with_rules(make_spec(training={"micro_batch_size": 64, "grad_accum_steps": 1}))
    assert not new_hardware(advice)


def test_a_custom_gpu_is_never_swapped_for_a_catalog_name():
    custom = {"memory_gib": 40.0, "bf16_tflops": 300.0, "fp32_tflops": 20.0, "bandwidth_gbs": 2000.0}
    advice, _ = advise_with_rules(make_spec(model=LLAMA_70B, hardware={"gpu": "Lab-accelerator", "custom": custom}))
    assert not new_hardware(advice)
