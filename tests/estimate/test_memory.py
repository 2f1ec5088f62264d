"""The memory model against hand-computed cases (Llama-3.2-1B: h 2048, kv 512, i 8192, 16 layers)."""
from __future__ import annotations

import pytest

from tunegate.estimate import calibration
from tunegate.estimate.activations import activation_bytes, layer_bytes_per_token, logits_bytes
from tunegate.estimate.families import load_architecture
from tunegate.estimate.memory import (
    CUDA_CONTEXT_GIB,
    GIB,
    NF4_BYTES_PER_PARAM,
    estimate_memory,
    memory_terms,
    verdict_of,
)
from tunegate.estimate.setup import TrainSetup
from tunegate.spec.gpus import lookup

ARCH = load_architecture("meta-llama/Llama-3.2-1B")
PARAMS = 1_235_814_400
BASE = TrainSetup(method="lora", micro_batch_size=1, seq_len=1024, lora_r=8,
                  lora_targets=["q_proj", "v_proj"], lora_dropout=0.0)


def test_one_llama_layer_keeps_the_hand_counted_bytes_per_token():
    norms = 2 * 4 * 2048               # fp32 copies inside both RMSNorms
    lora_inputs = 2 * 2048 + 2 * 2 * 8  # q and v share one bf16 input copy; two lora_A outputs
    attention = 2 * (2048 + 2 * 2048) + 2 * 2048 + 4 * 32  # q, repeated k/v, output, log-sum-exp
    mlp = 3 * 2 * 8192                 # gate, SiLU and up outputs
    assert layer_bytes_per_token(ARCH, BASE) == norms + lora_inputs + attention + mlp == 86_176


def test_activations_scale_with_layers_and_tokens():
    head = 4 * 2048 * 1024  # the final norm's fp32 copy
    assert activation_bytes(ARCH, BASE) == 16 * 86_176 * 1024 + head
    doubled = BASE.model_copy(update={"micro_batch_size": 2})
    assert activation_bytes(ARCH, doubled) == 2 * activation_bytes(ARCH, BASE)


def test_gradient_checkpointing_keeps_layer_inputs_plus_one_recomputed_layer():
    gc = BASE.model_copy(update={"gradient_checkpointing": True})
    assert activation_bytes(ARCH, gc) == 16 * 2 * 2048 * 1024 + 86_176 * 1024 + 4 * 2048 * 1024


def test_eager_attention_adds_the_quadratic_score_term_flash_does_not():
    eager = BASE.model_copy(update={"attention": "eager"})
    flash = BASE.model_copy(update={"attention": "flash_attention_2"})
    # fp32 softmax + its bf16 cast: (4 + 2) bytes x 32 heads x 1024 keys per token
    assert layer_bytes_per_token(ARCH, eager) - layer_bytes_per_token(ARCH, BASE) == 6 * 32 * 1024 - 2 * 2048 - 4 * 32
    # flash keeps k and v at their grouped width (512), not repeated to every head (2048)
    assert layer_bytes_per_token(ARCH, BASE) - layer_bytes_per_token(ARCH, flash) == 2 * 2 * (2048 - 512)


def test_lora_dropout_makes_each_adapted_module_keep_its_own_input_and_mask():
    dropout = BASE.model_copy(update={"lora_dropout": 0.05})
    # two modules x (bf16 dropout output + 1-byte mask) replace the one shared bf16 copy
    assert layer_bytes_per_token(ARCH, dropout) - layer_bytes_per_token(ARCH, BASE) == 2 * 3 * 2048 - 2 * 2048


def test_logits_cost_bf16_values_plus_three_fp32_buffers():
    assert logits_bytes(ARCH, BASE) == 1024 * 128_256 * (2 + 3 * 4)


def test_lora_weights_are_bf16_and_adapters_cost_16_bytes_each():
    terms = memory_terms(ARCH, BASE)
    lora = 16 * 8 * ((2048 + 2048) + (2048 + 512))
    assert terms["weights"] == 2 * PARAMS
    assert terms["lora_weights"] + terms["gradients"] + terms["optimizer_states"] == 16 * lora


def test_qlora_stores_the_layers_linear_weights_in_nf4_with_double_quantised_constants():
    terms = memory_terms(ARCH, BASE.model_copy(update={"method": "qlora"}))
    linear = 16 * (60_821_504 - 2 * 2048)
    assert NF4_BYTES_PER_PARAM == pytest.approx((4 + 0.127) / 8, abs=1e-4)
    assert terms["weights"] == pytest.approx(linear * NF4_BYTES_PER_PARAM + (PARAMS - linear) * 2)


def test_unsharded_full_fine_tuning_is_the_hf_trainer_on_fp32_weights_under_autocast():
    # fp32 weights, gradients and both moments (16 bytes) plus autocast's bf16 copy of every cast
    # weight (the decoder's linears and the lm_head), which each matmul saves for the backward pass
    terms = memory_terms(ARCH, BASE.model_copy(update={"method": "full"}))
    assert terms["weights"] + terms["gradients"] + terms["optimizer_states"] == 16 * PARAMS
    assert terms["autocast_weight_copies"] == 2 * (16 * (60_821_504 - 2 * 2048) + 128_256 * 2048)


def test_sharded_full_fine_tuning_keeps_16_bit_weights_and_an_fp32_master_copy():
    terms = memory_terms(ARCH, BASE.model_copy(update={"method": "full", "gpu_count": 2, "sharding": "zero2"}))
    # ZeRO's 2 + 2 + 12 bytes per parameter, of which gradients, master and moments are halved
    assert terms["weights"] == 2 * PARAMS
    assert terms["master_weights"] + terms["gradients"] + terms["optimizer_states"] == 14 * PARAMS / 2


def test_pure_bf16_full_fine_tuning_costs_8_bytes_per_parameter():
    terms = memory_terms(ARCH, BASE.model_copy(update={"method": "full", "optimizer_state": "param_dtype"}))
    assert sum(terms[k] for k in ("weights", "gradients", "optimizer_states")) == 8 * PARAMS
    assert "master_weights" not in terms


def test_zero3_shards_weights_and_states_across_gpus():
    full = BASE.model_copy(update={"method": "full", "gpu_count": 4})
    ddp, zero3 = memory_terms(ARCH, full), memory_terms(ARCH, full.model_copy(update={"sharding": "zero3"}))
    assert zero3["weights"] == 2 * PARAMS / 4
    assert zero3["optimizer_states"] == ddp["optimizer_states"] / 4
    assert ddp["ddp_buckets"] == ddp["gradients"]  # DDP's bucket copy of the gradients
    assert "ddp_buckets" not in zero3


def test_peak_adds_context_and_fragmentation_to_the_allocated_peak():
    mem = estimate_memory(ARCH, BASE, lookup("A100-80GB"))
    terms = memory_terms(ARCH, BASE)
    static = sum(v for k, v in terms.items() if k not in ("gradients", "activations", "logits"))
    allocated = (static + terms["activations"] + terms["logits"]) / GIB
    assert mem.peak_allocated_gib == pytest.approx(allocated, abs=1e-3)
    assert mem.peak_gib == pytest.approx(allocated * (1 + calibration.RESERVE) + CUDA_CONTEXT_GIB, abs=2e-3)
    assert mem.verdict == "fits"


def test_accumulation_keeps_gradients_alive_through_the_backward_pass():
    accum = BASE.model_copy(update={"grad_accum_steps": 4})
    gpu = lookup("A100-80GB")
    diff = estimate_memory(ARCH, accum, gpu).peak_allocated_gib - estimate_memory(ARCH, BASE, gpu).peak_allocated_gib
    assert diff == pytest.approx(memory_terms(ARCH, BASE)["gradients"] / GIB, abs=1e-3)


@pytest.mark.parametrize("peak, high, verdict", [(18.0, 19.9, "fits"), (19.0, 21.0, "tight"),
                                                 (20.5, 22.0, "does not fit")])
def test_the_verdict_is_read_on_the_bands_top(peak, high, verdict):
    # on a 20 GiB GPU: "fits" only when the upper bound fits, "tight" when only the point estimate does
    assert verdict_of(peak, high, 20.0) == verdict


@pytest.mark.parametrize("batch", [1, 2, 3, 4])
def test_the_band_brackets_the_point_estimate_with_the_calibrated_shares(batch):
    mem = estimate_memory(ARCH, BASE.model_copy(update={"micro_batch_size": batch, "seq_len": 2048}), lookup("L4"))
    assert mem.low_gib == pytest.approx(mem.peak_gib * calibration.BAND_LOW, abs=2e-3)
    assert mem.high_gib == pytest.approx(mem.peak_gib * calibration.BAND_HIGH, abs=2e-3)
    assert mem.verdict == verdict_of(mem.peak_gib, mem.high_gib, mem.capacity_gib)


def test_the_biggest_term_is_named():
    mem = estimate_memory(ARCH, BASE.model_copy(update={"micro_batch_size": 8}), lookup("A100-80GB"))
    assert mem.biggest == max(("weights", "activations", "logits"), key=lambda k: mem.breakdown_gib[k])


@pytest.mark.parametrize("optimizer", ["sgd", "adafactor"])
def test_sgd_and_adafactor_keep_no_adam_moments(optimizer):
    # the HF Trainer's "sgd" has no momentum; Adafactor keeps no first moment and factored second ones
    from tests.support.estimate_specs import make_spec
    from tunegate.estimate.setup import setup_from_spec

    setup = setup_from_spec(make_spec(training={"method": "full", "optimizer": optimizer}))
    assert memory_terms(ARCH, setup)["optimizer_states"] == 0


def test_a_paged_optimizers_states_are_left_out_of_the_peak():
    # CUDA unified memory evicts them to CPU RAM rather than run out (QLoRA, section 3)
    full = BASE.model_copy(update={"method": "full", "gradient_checkpointing": True})
    paged = full.model_copy(update={"paged_optimizer": True})
    states = memory_terms(ARCH, full)["optimizer_states"] / GIB
    fused_peak, paged_peak = (estimate_memory(ARCH, s, lookup("A100-80GB")).peak_allocated_gib for s in (full, paged))
    assert fused_peak - paged_peak == pytest.approx(states, abs=2e-3)
