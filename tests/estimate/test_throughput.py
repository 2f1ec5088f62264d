"""FLOPs per token and throughput against hand-computed cases (Llama-3.1-8B)."""
from __future__ import annotations

import pytest

from tunegate.estimate.families import load_architecture
from tunegate.estimate.setup import TrainSetup
from tunegate.estimate.throughput import (
    ASSUMPTIONS,
    FAMILY_UTILISATION,
    attention_forward_flops,
    estimate_throughput,
    hardware_flops_per_token,
    implied_mfu,
    model_flops_per_token,
    optimizer_step_seconds,
)
from tunegate.spec.gpus import lookup

ARCH = load_architecture("meta-llama/Llama-3.1-8B")
LAYERS = 32 * (218_112_000 - 2 * 4096)     # linear weights of the decoder layers
MATMUL = LAYERS + 128_256 * 4096           # plus the lm_head
ATTN = 4 * 32 * 4096 * 4096                # forward QK^T and AV at 4096 tokens
LORA = 32 * 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2)  # r=16 on q, k, v, o


def setup(**kw):
    return TrainSetup(**{"seq_len": 4096, "lora_r": 16, **kw})


def test_full_fine_tuning_is_six_flops_per_matmul_parameter_plus_attention():
    assert model_flops_per_token(ARCH, setup(method="full")) == 6 * MATMUL + 3 * ATTN


def test_lora_skips_the_frozen_weight_gradients():
    assert model_flops_per_token(ARCH, setup(method="lora")) == 4 * MATMUL + 3 * ATTN + 6 * LORA


def test_fused_attention_skips_the_masked_half_of_the_causal_scores():
    # MFU counts the whole score matrix (PaLM's convention); the GPU executes half of it
    lora = setup(method="lora")
    assert attention_forward_flops(ARCH, 4096, causal=True) == ATTN / 2
    assert hardware_flops_per_token(ARCH, lora) == model_flops_per_token(ARCH, lora) - 3 * ATTN / 2
    eager = setup(method="lora", attention="eager")
    assert hardware_flops_per_token(ARCH, eager) == model_flops_per_token(ARCH, eager)


def test_gradient_checkpointing_recomputes_one_forward_of_the_layers():
    gc = setup(method="lora", gradient_checkpointing=True)
    causal = model_flops_per_token(ARCH, gc) - 3 * ATTN / 2
    assert hardware_flops_per_token(ARCH, gc) == causal + 2 * LAYERS + ATTN / 2
    assert model_flops_per_token(ARCH, gc) == model_flops_per_token(ARCH, setup(method="lora"))


def test_a_mixture_of_experts_multiplies_through_its_active_experts_only():
    from tests.support.paths import DATA
    mixtral = load_architecture(str(DATA / "estimate" / "configs" / "mixtral-8x7b"))
    flops = model_flops_per_token(mixtral, setup(method="full"))
    # 6 x (12.88 B active parameters - the embedding) + attention, never 6 x 46.7 B
    assert 6 * 12.6e9 < flops < 6 * 13.2e9 + 3 * attention_forward_flops(mixtral, 4096)


def test_tokens_per_second_follow_from_peak_and_the_family_prior():
    a100 = lookup("A100-80GB")
    t = estimate_throughput(ARCH, setup(method="lora"), a100)
    util = FAMILY_UTILISATION["ampere"] * ASSUMPTIONS["lora"]
    hardware = 4 * MATMUL + 3 * ATTN / 2 + 6 * LORA
    compute_s = 4096 * hardware / (312e12 * util)
    adamw_s = LORA * 7 * 4 / 2039e9  # fp32 adapters: read w, g, m, v; write w, m, v
    assert t.tokens_per_s == pytest.approx(4096 / (compute_s + adamw_s))
    # MFU in PaLM's convention sits above the utilisation: it credits the skipped causal half too
    assert t.mfu == pytest.approx(util * (4 * MATMUL + 3 * ATTN + 6 * LORA) / hardware, abs=1e-3)


def test_the_adamw_step_of_a_full_fine_tune_is_timed_from_memory_bandwidth():
    full = setup(method="full", optimizer_state="param_dtype")
    # 8,030,261,248 params x 7 bf16 tensors touched / 2,039 GB/s
    assert optimizer_step_seconds(ARCH, full, lookup("A100-80GB")) == pytest.approx(8_030_261_248 * 14 / 2039e9)
    sharded = full.model_copy(update={"gpu_count": 4, "sharding": "zero3"})
    assert optimizer_step_seconds(ARCH, sharded, lookup("A100-80GB")) == pytest.approx(8_030_261_248 * 14 / 2039e9 / 4)


def test_compile_and_eager_attention_change_the_assumed_utilisation():
    a100 = lookup("A100-80GB")
    base = estimate_throughput(ARCH, setup(), a100).utilisation
    assert estimate_throughput(ARCH, setup(compile=True), a100).utilisation == pytest.approx(base * 1.25, abs=1e-4)
    assert estimate_throughput(ARCH, setup(attention="eager"), a100).utilisation == pytest.approx(base * 0.8, abs=1e-4)


def test_a_mini_run_measurement_replaces_the_assumption():
    t = estimate_throughput(ARCH, setup(), lookup("A100-80GB"), measured_tokens_per_s=2000.0)
    assert t.source == "mini-run" and t.tokens_per_s == 2000.0
    assert t.mfu == pytest.approx(2000.0 * model_flops_per_token(ARCH, setup()) / 312e12, abs=1e-4)


def test_implied_mfu_of_a_stated_wall_clock():
    # 15e9 tokens in 120 h on 4 GPUs is 8,680.6 tokens/s per GPU
    mfu = implied_mfu(15e9, 120.0, 4, 36.5e9, 312.0)
    assert mfu == pytest.approx(15e9 / (120 * 3600) / 4 * 36.5e9 / 312e12)
