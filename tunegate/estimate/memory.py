"""Peak GPU memory of a fine-tuning run, as a breakdown of named terms per GPU.

    mem = estimate_memory(arch, setup, gpu)
    mem.peak_gib, mem.verdict, mem.biggest

Weights, trainable parameters with gradients and AdamW moments, activations
(`tunegate.estimate.activations`), the logits, the CUDA context; data-parallel replicas hold a full copy
each unless ZeRO/FSDP shards it. The peak is the start of the backward pass: everything static,
all activations and the loss buffers, plus the gradients when accumulation keeps them alive.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from tunegate.estimate.activations import activation_bytes, logits_bytes
from tunegate.estimate.architecture import Architecture, lora_param_count
from tunegate.estimate.setup import TrainSetup
from tunegate.spec.gpus import GPU

GIB = 2**30
FP32 = 4
# NF4 with double quantisation (Dettmers et al. 2023, QLoRA, section 3): 4 bits per weight plus
# 8/64 + 32/(64·256) = 0.127 bits of quantisation constants.
NF4_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
# CUDA context, cuBLAS/cuDNN workspaces: outside PyTorch's allocator, about 0.5 GiB on
# Ampere/Hopper with CUDA 12 (nvidia-smi minus torch.cuda.memory_reserved on an idle process).
CUDA_CONTEXT_GIB = 0.5
# The caching allocator rounds and splits blocks; reserved memory runs a few % over allocated.
FRAGMENTATION = 0.05
# Verdict: above this share of the GPU the run is "tight" (a longer batch or a new kernel OOMs).
TIGHT_SHARE = 0.90

Verdict = Literal["fits", "tight", "does not fit"]


class MemoryEstimate(BaseModel):
    """Per-GPU memory, term by term, and the verdict against the GPU's capacity."""

    model_config = ConfigDict(extra="forbid")

    breakdown_gib: dict[str, float]
    peak_allocated_gib: float
    peak_gib: float
    capacity_gib: float
    verdict: Verdict
    biggest: str
    trainable_params: int
    total_params: int


def _bytes(precision: str) -> int:
    return 4 if precision == "fp32" else 2


def weights_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """The (frozen or trained) base weights at their storage precision."""
    total = arch.param_count()
    if setup.int8_base and setup.method == "lora":  # bitsandbytes int8 holds the linear layers in 1 byte
        linear = arch.num_layers * arch.layer_linear_params()
        return linear * 1 + (total - linear) * _bytes(setup.precision)
    if setup.method != "qlora":
        return total * _bytes(setup.precision)
    linear = arch.num_layers * arch.layer_linear_params()  # bitsandbytes quantises these only
    return linear * NF4_BYTES_PER_PARAM + (total - linear) * _bytes(setup.precision)


def trainable_params(arch: Architecture, setup: TrainSetup) -> int:
    if setup.method == "full":
        return arch.param_count()
    return lora_param_count(arch, setup.lora_targets, setup.lora_r) + setup.saved_module_params


def _trainable_terms(arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """Bytes of the trainable parameters' own copies, gradients and AdamW moments."""
    n = trainable_params(arch, setup)
    if setup.method != "full":
        # PEFT keeps adapters in fp32 (autocast_adapter_dtype): weights, grads, m and v (m and v
        # in one byte each with an 8-bit optimizer). modules_to_save are trained copies of base
        # modules in the base precision, with their gradients and moments.
        saved, p = setup.saved_module_params, _bytes(setup.precision)
        terms = {"lora_weights": (n - saved) * FP32, "gradients": (n - saved) * FP32 + saved * p,
                 "optimizer_states": 2 * n * setup.optimizer_state_bytes}
        if saved:
            terms["saved_modules"] = saved * p
        return terms
    p = _bytes(setup.precision)
    if setup.optimizer_state == "param_dtype" or setup.precision == "fp32":
        state = p if setup.optimizer_state == "param_dtype" else FP32
        return {"gradients": n * p, "optimizer_states": 2 * n * state}
    return {"master_weights": n * FP32, "gradients": n * p, "optimizer_states": 2 * n * FP32}


def _sharded(terms: dict[str, float], arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """Divide what ZeRO/FSDP shards across the data-parallel GPUs; add DDP's bucket copy."""
    n = setup.gpu_count
    out = dict(terms)
    if n > 1 and setup.sharding != "none":
        for key in ("master_weights", "gradients", "optimizer_states", "lora_weights", "saved_modules"):
            if key in out:
                out[key] /= n
    if n > 1 and setup.sharding in ("zero3", "fsdp"):
        out["weights"] /= n
        # One layer's full weights are gathered at a time, the next one prefetched.
        out["gathered_layer"] = 2 * arch.layer_linear_params() * _bytes(setup.precision)
    if n > 1 and setup.sharding == "none":
        # DDP's default (gradient_as_bucket_view=False) keeps a second copy of the gradients.
        out["ddp_buckets"] = terms["gradients"]
    return out


def memory_terms(arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """Every term in bytes per GPU, before the peak is assembled."""
    terms: dict[str, float] = {"weights": weights_bytes(arch, setup)}
    terms.update(_trainable_terms(arch, setup))
    terms = _sharded(terms, arch, setup)
    if setup.method == "qlora":
        # bitsandbytes dequantises one weight matrix to 16 bit for each matmul.
        shapes = arch.linear_shapes().values()
        terms["dequant_buffer"] = max(a * b for a, b, _ in shapes) * 2
    terms["activations"] = activation_bytes(arch, setup)
    terms["logits"] = logits_bytes(arch, setup)
    return terms


def peak_allocated_bytes(terms: dict[str, float], setup: TrainSetup) -> float:
    """Bytes PyTorch has allocated at the peak, the start of the backward pass.

    Gradients are freed by zero_grad(set_to_none) after each step, so with no accumulation they
    grow while activations are freed; with accumulation they live through every micro batch.
    """
    static = sum(v for k, v in terms.items() if k not in ("gradients", "activations", "logits"))
    dynamic = terms["activations"] + terms["logits"]
    if setup.grad_accum_steps > 1:
        return static + dynamic + terms["gradients"]
    return static + max(dynamic, terms["gradients"])


def estimate_memory(arch: Architecture, setup: TrainSetup, gpu: GPU) -> MemoryEstimate:
    """The per-GPU memory breakdown, peak and verdict for `setup` on `gpu`."""
    terms = memory_terms(arch, setup)
    allocated = peak_allocated_bytes(terms, setup) / GIB
    overhead = {"fragmentation": allocated * FRAGMENTATION, "cuda_context": CUDA_CONTEXT_GIB}
    breakdown = {k: round(v / GIB, 3) for k, v in terms.items()}
    breakdown.update({k: round(v, 3) for k, v in overhead.items()})
    peak = allocated + sum(overhead.values())
    verdict: Verdict = ("fits" if peak <= TIGHT_SHARE * gpu.memory_gib
                        else "tight" if peak <= gpu.memory_gib else "does not fit")
    biggest = max(terms, key=lambda k: terms[k])
    return MemoryEstimate(
        breakdown_gib=breakdown, peak_allocated_gib=round(allocated, 3), peak_gib=round(peak, 3),
        capacity_gib=gpu.memory_gib, verdict=verdict, biggest=biggest,
        trainable_params=trainable_params(arch, setup), total_params=arch.param_count())
