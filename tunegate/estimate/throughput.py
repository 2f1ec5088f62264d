"""Training FLOPs per token and the tokens/s a GPU can be expected to deliver.

FLOPs follow Kaplan et al. 2020 / PaLM (Chowdhery et al. 2022, appendix B): a forward pass costs
2 FLOPs per matmul parameter per token plus 4·L·(heads·head_dim)·s for attention (the usual
convention counts the full, not the causal half, score matrix). Full fine-tuning is 3x the
forward pass (6N): input and weight gradients. LoRA freezes the base: its backward computes input
gradients (2N) but no weight gradients, so ~4N, plus 6 FLOPs per adapter parameter; attention has
no weights and its backward stays 2x. Gradient checkpointing recomputes each layer's forward once.

Throughput = tokens per optimizer step / (compute time + AdamW step time): compute time is hardware
FLOPs / (peak x utilisation), with the utilisation from `ASSUMPTIONS` (each row says where its
number comes from); the AdamW step is memory-bound and timed from the GPU's bandwidth. MFU is then reported the standard way:
model FLOPs (no recomputation) per second over the GPU's dense peak.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tunegate.estimate.architecture import Architecture, lora_param_count
from tunegate.estimate.setup import TrainSetup
from tunegate.spec.gpus import GPU

# Hardware-FLOPs utilisation a Hugging Face Trainer run reaches with flash/SDPA attention, by GPU
# family. Sources: FlashAttention-2 (Dao 2023, section 4.2) reports end-to-end GPT training at up
# to 225 TFLOP/s per A100 (72 %) with a hand-tuned stack; Korthikanti et al. 2022 report 52-56 %
# MFU on A100 for Megatron; generic PyTorch stacks land well below those: we take 45 % on
# Ampere/Ada. Hopper's 3x larger peak is harder to saturate without FP8/TMA kernels (torchtitan,
# Liang et al. 2024, report ~40 % MFU for Llama-3-8B on H100 in bf16): 38 %. Volta/Turing lack
# bf16 and flash attention: 30 %.
BASE_UTILISATION = {"8.0": 0.45, "8.6": 0.45, "8.9": 0.45, "9.0": 0.38, "7.0": 0.30, "7.5": 0.30}
ASSUMPTIONS = {
    # Eager attention materialises the s x s scores in HBM: memory-bound, ~20 % slower end to end
    # at 2k tokens (FlashAttention-2, figure 1 vs the PyTorch baseline).
    "eager_attention": 0.8,
    # torch.compile fuses the elementwise chains: +27 % tokens/s on Llama-3.2-3B (torchtune README,
    # "Optimization flags" table, +Compile row).
    "compile": 1.25,
    # LoRA: small adapter GEMMs and no weight-gradient GEMMs to amortise launches.
    "lora": 0.85,
    # QLoRA: NF4 dequantisation before every matmul; the QLoRA paper and bitsandbytes report
    # 4-bit training noticeably slower than 16-bit LoRA.
    "qlora": 0.6,
    # Data parallelism: the all-reduce mostly overlaps the backward pass on NVLink.
    "data_parallel": 0.95,
}


def optimizer_step_seconds(arch: Architecture, setup: TrainSetup, gpu: GPU) -> float:
    """Seconds one AdamW step takes: memory-bound, it reads and writes every trainable state.

    Per parameter it reads weight, gradient and both moments and writes weight and moments
    (7 tensors); with fp32 master weights the 16-bit copy is written too. Negligible for LoRA,
    but for full fine-tuning with few tokens per step it rivals the compute.
    """
    if setup.method != "full":
        n, bytes_per = lora_param_count(arch, setup.lora_targets, setup.lora_r), 7 * 4
    else:
        n = arch.param_count()
        p = 4 if setup.precision == "fp32" else 2
        bytes_per = 7 * p if setup.optimizer_state == "param_dtype" else 7 * 4 + 2 * p
    shards = setup.gpu_count if setup.sharding != "none" else 1
    return n / shards * bytes_per / (gpu.bandwidth_gbs * 1e9)


class Throughput(BaseModel):
    """FLOPs per token and the tokens/s a GPU delivers."""

    model_config = ConfigDict(extra="forbid")

    model_flops_per_token: float
    hardware_flops_per_token: float
    peak_tflops: float
    utilisation: float
    tokens_per_s: float  # per GPU
    mfu: float
    source: str  # "model" or "mini-run"


def attention_forward_flops(arch: Architecture, seq_len: int) -> float:
    """QK^T and AV for one token against `seq_len` keys, in every layer."""
    return 4.0 * arch.num_layers * arch.q_dim * seq_len


def model_flops_per_token(arch: Architecture, setup: TrainSetup) -> float:
    """Training FLOPs per token the method needs (no recomputation)."""
    matmul = 2.0 * arch.matmul_params()
    attn = attention_forward_flops(arch, setup.seq_len)
    if setup.method == "full":
        return 3 * (matmul + attn)
    adapters = 6.0 * lora_param_count(arch, setup.lora_targets, setup.lora_r)
    return 2 * matmul + 3 * attn + adapters


def hardware_flops_per_token(arch: Architecture, setup: TrainSetup) -> float:
    """Model FLOPs plus the forward pass gradient checkpointing runs again (lm_head excluded)."""
    flops = model_flops_per_token(arch, setup)
    if setup.gradient_checkpointing:
        layers = 2.0 * arch.num_layers * arch.layer_linear_params()
        flops += layers + attention_forward_flops(arch, setup.seq_len)
    return flops


def utilisation(gpu: GPU, setup: TrainSetup) -> float:
    """The hardware-FLOPs utilisation assumed for this GPU and setup."""
    u = BASE_UTILISATION.get(gpu.compute_capability, 0.35)
    if setup.attention == "eager":
        u *= ASSUMPTIONS["eager_attention"]
    if setup.compile:
        u *= ASSUMPTIONS["compile"]
    if setup.method in ("lora", "qlora"):
        u *= ASSUMPTIONS[setup.method]
    if setup.gpu_count > 1:
        u *= ASSUMPTIONS["data_parallel"]
    return u


def estimate_throughput(arch: Architecture, setup: TrainSetup, gpu: GPU,
                        measured_tokens_per_s: float | None = None) -> Throughput:
    """Tokens/s per GPU from the model, or from a mini-run measurement on the same GPU type."""
    peak = gpu.peak_tflops(setup.precision) * 1e12
    model = model_flops_per_token(arch, setup)
    hardware = hardware_flops_per_token(arch, setup)
    if measured_tokens_per_s:
        tps, source = measured_tokens_per_s, "mini-run"
        util = tps * hardware / peak
    else:
        util = utilisation(gpu, setup)
        tokens_per_step = setup.tokens_per_micro_batch * setup.grad_accum_steps
        step_s = tokens_per_step * hardware / (peak * util) + optimizer_step_seconds(arch, setup, gpu)
        tps, source = tokens_per_step / step_s, "model"
    return Throughput(model_flops_per_token=model, hardware_flops_per_token=hardware,
                      peak_tflops=peak / 1e12, utilisation=round(util, 4), tokens_per_s=tps,
                      mfu=round(tps * model / peak, 4), source=source)


def implied_mfu(total_tokens: float, hours: float, gpu_count: int, model_flops: float,
                peak_tflops: float) -> float:
    """The MFU a stated wall-clock time implies for `total_tokens` on `gpu_count` GPUs."""
    per_gpu_tps = total_tokens / (hours * 3600.0) / gpu_count
    return per_gpu_tps * model_flops / (peak_tflops * 1e12)
