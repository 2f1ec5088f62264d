"""Training FLOPs per token and the tokens/s a GPU can be expected to deliver.

Model FLOPs follow PaLM (Chowdhery et al. 2022, appendix B), the convention MFU is reported in: a
forward pass costs 2 FLOPs per matmul parameter per token (the ACTIVE parameters of a mixture of
experts) plus 4·L·(heads·head_dim)·s for attention, counting the whole score matrix. Full
fine-tuning is 3x the forward pass (6N): input and weight gradients. LoRA freezes the base: its
backward computes input gradients (2N) but no weight gradients, so ~4N, plus 6 FLOPs per adapter
parameter; attention has no weights and its backward stays 2x.

Hardware FLOPs are what the GPU really executes, and set the time: a causal mask lets FlashAttention
and SDPA's fused kernels skip the masked half of the score matrix (eager attention computes it
all), and gradient checkpointing recomputes each layer's forward once.

Throughput = tokens per optimizer step / (compute time + AdamW step time): compute time is hardware
FLOPs / (peak x utilisation), the utilisation a prior per GPU family (`FAMILY_UTILISATION`, each
with its source) adjusted by `ASSUMPTIONS`; the AdamW step is memory-bound and timed from the
GPU's bandwidth. A mini-run's tokens/s on the same GPU type replaces the prior.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tunegate.estimate.architecture import Architecture, lora_param_count
from tunegate.estimate.setup import TrainSetup
from tunegate.spec.gpus import GPU

# Hardware-FLOPs utilisation a Hugging Face Trainer run reaches with fused attention, by GPU family.
# Ampere: FlashAttention-2 (Dao 2023, section 4.2) reports end-to-end GPT training at up to 225
# TFLOP/s per A100 (72 %) with a hand-tuned stack, Megatron 52-56 % (Korthikanti et al. 2022);
# torchtune's Llama-3.2-3B full fine-tune on one A100 (README, Optimization flags) runs at ~48 %
# MFU packed: generic PyTorch stacks land near 45 %. Ada: the same generation of tensor cores on
# GDDR memory: 45 %. Hopper's 3x larger peak is harder to saturate without FP8/TMA kernels
# (torchtitan, 2024-12 benchmarks: 33-39 % MFU for Llama-3.1-8B on 8 H100s): 38 %. Blackwell:
# twice Hopper's peak again, no published fine-tuning MFU yet: 30 %. Volta/Turing lack bf16 and
# FlashAttention-2: 30 %. AMD CDNA2/CDNA3 with ROCm PyTorch (AMD's own MI300X training reports
# sit at 25-35 % MFU): 25 % and 30 %. A custom GPU gets the generic 35 %.
FAMILY_UTILISATION = {"ampere": 0.45, "ada": 0.45, "hopper": 0.38, "blackwell": 0.30, "volta": 0.30,
                      "turing": 0.30, "cdna2": 0.25, "cdna3": 0.30, "custom": 0.35}
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
    # A mixture of experts routes a token's top_k experts through many small GEMMs (a loop over
    # experts in transformers): far from peak.
    "moe": 0.5,
}

# Minutes torch.compile spends compiling before the first fast step, by mode: planning figures, not
# measurements of this run. default: Inductor compiles Llama-3.1-8B's forward in ~20 s on one GPU
# (huggingface/accelerate benchmarks/torch.compile/README.md, full compilation, 20.4 s); training
# compiles the joint forward-backward graph (about 3x the forward's work) and compiles again once
# the second sequence length marks the shapes dynamic: ~2 min. reduce-overhead: the same, plus
# recording a CUDA graph for each new batch shape: ~3 min. max-autotune: also benchmarks Triton
# matmul templates for every distinct GEMM shape (29 configs each since pytorch/pytorch#125687; a
# LoRA step has ~20 shapes, forward and backward): ~15 min. Each process compiles its own copy at
# the same time, so a multi-GPU run pays it once in wall-clock time. The steady speed-up is the
# same for every mode (ASSUMPTIONS["compile"]): no published fine-tuning benchmark credits
# max-autotune or CUDA graphs with more at these matmul sizes.
COMPILE_WARMUP_MINUTES = {"default": 2.0, "reduce-overhead": 3.0, "max-autotune": 15.0}


def compile_warmup_hours(setup: TrainSetup) -> float:
    """Wall-clock hours torch.compile adds at the start of the run (0 without compile)."""
    return COMPILE_WARMUP_MINUTES[setup.compile_mode] / 60.0 if setup.compile else 0.0


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


def attention_forward_flops(arch: Architecture, seq_len: int, causal: bool = False) -> float:
    """QK^T and AV for one token against `seq_len` keys in every layer (half of them when causal)."""
    keys = seq_len / 2 if causal else seq_len
    return 4.0 * arch.num_layers * arch.q_dim * keys


def model_flops_per_token(arch: Architecture, setup: TrainSetup) -> float:
    """Training FLOPs per token the method needs (no recomputation)."""
    matmul = 2.0 * arch.matmul_params()
    attn = attention_forward_flops(arch, setup.seq_len)
    if setup.method == "full":
        return 3 * (matmul + attn)
    adapters = 6.0 * lora_param_count(arch, setup.lora_targets, setup.lora_r)
    return 2 * matmul + 3 * attn + adapters


def hardware_flops_per_token(arch: Architecture, setup: TrainSetup) -> float:
    """What the GPU executes: causal attention's skipped half removed (fused kernels), and the
    forward pass gradient checkpointing runs again (lm_head excluded)."""
    flops = model_flops_per_token(arch, setup)
    causal = setup.attention != "eager"
    full_attn = attention_forward_flops(arch, setup.seq_len)
    attn = attention_forward_flops(arch, setup.seq_len, causal=causal)
    flops -= 3 * (full_attn - attn)  # forward and its 2x backward
    if setup.gradient_checkpointing:
        flops += 2.0 * arch.active_decoder_linear_params() + attn
    return flops


def utilisation(gpu: GPU, setup: TrainSetup, arch: Architecture | None = None) -> float:
    """The hardware-FLOPs utilisation assumed for this GPU and setup."""
    u = FAMILY_UTILISATION.get(gpu.family, 0.35)
    if setup.attention == "eager":
        u *= ASSUMPTIONS["eager_attention"]
    if setup.compile:
        u *= ASSUMPTIONS["compile"]
    if setup.method in ("lora", "qlora"):
        u *= ASSUMPTIONS[setup.method]
    if setup.gpu_count > 1:
        u *= ASSUMPTIONS["data_parallel"]
    if arch is not None and arch.is_moe:
        u *= ASSUMPTIONS["moe"]
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
        util = utilisation(gpu, setup, arch)
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
