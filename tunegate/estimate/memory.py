"""Peak GPU memory of a fine-tuning run, as a breakdown of named terms per GPU, with a band.

    mem = estimate_memory(arch, setup, gpu)
    mem.peak_gib, (mem.low_gib, mem.high_gib), mem.verdict, mem.biggest

Weights (every expert of a mixture of experts), trainable parameters with gradients and AdamW
moments in the dtypes the recipe keeps them in, activations (`tunegate.estimate.activations`), the
logits, the allocator's reserve and the CUDA context; data-parallel replicas hold a full copy each
unless ZeRO/FSDP shards it. The peak is the start of the backward pass: everything static, all
activations and the loss buffers, plus the gradients when accumulation keeps them alive.

The band comes from `tunegate.estimate.calibration` (measured against published peaks); the
verdict is read on its top: "fits" only when the upper bound fits, "tight" when the point
estimate fits but the upper bound does not, "does not fit" when the point estimate does not.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from tunegate.estimate import calibration
from tunegate.estimate.activations import activation_bytes, logits_bytes
from tunegate.estimate.architecture import Architecture, expert_lora_param_count, lora_param_count
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

Verdict = Literal["fits", "tight", "does not fit"]
_DYNAMIC = ("gradients", "activations", "logits")


class MemoryEstimate(BaseModel):
    """Per-GPU memory, term by term, its band and the verdict against the GPU's capacity."""

    model_config = ConfigDict(extra="forbid")

    breakdown_gib: dict[str, float]
    peak_allocated_gib: float
    peak_gib: float
    low_gib: float
    high_gib: float
    capacity_gib: float
    verdict: Verdict
    biggest: str
    trainable_params: int
    total_params: int


def _bytes(precision: str) -> int:
    return 4 if precision == "fp32" else 2


# NF4 without double quantisation: one fp32 constant per block of 64 weights.
NF4_SINGLE_BYTES_PER_PARAM = (4 + 32 / 64) / 8


def quantised_params(arch: Architecture, setup: TrainSetup) -> int:
    """Weights bitsandbytes stores in 4 bit: nn.Linear modules only (experts are 3-D parameters)."""
    attention = arch.num_layers * sum(m.params for m in arch.attention)
    linear = attention + arch.dense_layers * sum(m.params for m in arch.mlp)
    if arch.experts is not None:  # a shared expert is an MLP of nn.Linear modules
        linear += arch.experts.layers * sum(m.params for m in arch.experts.shared_linear(arch.hidden_size))
        if setup.linear_experts:  # transformers 4: every expert and the router are nn.Linear too
            linear += arch.experts.layers * (arch.experts.num_experts * arch.experts.expert_params(arch.hidden_size)
                                             + arch.hidden_size * arch.experts.num_experts)
    head = arch.vocab_size * arch.hidden_size if setup.quantized_head and not arch.tie_embeddings else 0
    return linear + head


def weights_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """The frozen base weights at their storage precision (full fine-tuning: `_full_terms`)."""
    total = arch.param_count()
    # what a k-bit base keeps unquantised (embeddings, head, norms): fp32 after prepare_model_for_kbit_training
    rest = FP32 if setup.kbit_fp32_rest else _bytes(setup.precision)
    if setup.int8_base and setup.method == "lora":  # bitsandbytes int8 holds nn.Linear layers in 1 byte
        linear = quantised_params(arch, setup)
        return linear * 1 + (total - linear) * rest
    if setup.method != "qlora":
        return total * _bytes(setup.precision)
    linear = quantised_params(arch, setup)
    nf4 = NF4_BYTES_PER_PARAM if setup.nf4_double_quant else NF4_SINGLE_BYTES_PER_PARAM
    return linear * nf4 + (total - linear) * rest


def trainable_params(arch: Architecture, setup: TrainSetup) -> int:
    if setup.method == "full":
        return arch.param_count()
    experts = expert_lora_param_count(arch, setup.lora_targets, setup.lora_r) if setup.linear_experts else 0
    return lora_param_count(arch, setup.lora_targets, setup.lora_r) + experts + setup.saved_module_params


def _full_terms(arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """Full fine-tuning: weights, gradients and AdamW moments, in the dtypes the recipe keeps them.

    "param_dtype" (pure bf16: torchtune, a model loaded in bf16 under the HF Trainer): 2 + 2 + 4
    bytes per parameter. "fp32" unsharded is the HF Trainer on an fp32-loaded model: fp32 weights
    and gradients, fp32 moments, and autocast's bf16 copy of each weight, saved for the backward
    pass (4 + 4 + 8 + 2). "fp32" under ZeRO/FSDP: 16-bit weights and gradients, an fp32 master
    copy and fp32 moments (the ZeRO paper's 2 + 2 + 12). An 8-bit optimizer keeps each moment in
    one byte.
    """
    n, p = arch.param_count(), _bytes(setup.precision)

    def moments(per_value: int) -> float:
        return 2 * n * min(per_value, setup.optimizer_state_bytes)

    if setup.optimizer_state == "param_dtype" or setup.precision == "fp32":
        return {"weights": n * p, "gradients": n * p, "optimizer_states": moments(p)}
    if setup.sharding == "none":
        terms = {"weights": n * FP32, "gradients": n * FP32, "optimizer_states": moments(FP32)}
        if setup.autocast:
            # with checkpointing only the layer being recomputed holds its casts
            cast = arch.decoder_linear_params() + arch.vocab_size * arch.hidden_size  # embeddings are not cast
            copies = arch.decoder_linear_params() / arch.num_layers if setup.gradient_checkpointing else cast
            terms["autocast_weight_copies"] = copies * p
        return terms
    return {"weights": n * p, "master_weights": n * FP32, "gradients": n * p, "optimizer_states": moments(FP32)}


def _lora_terms(arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """The frozen base and the adapters: PEFT keeps adapters in fp32 (weights, grads, m and v).

    An 8-bit optimizer keeps m and v in one byte each. lora.modules_to_save are trained copies of
    base modules in the base precision, with their gradients and moments.
    """
    saved, p = setup.saved_module_params, _bytes(setup.precision)
    n = trainable_params(arch, setup) - saved
    b = FP32 if setup.adapter_dtype == "fp32" else p
    moments = 2 * (n * min(b, setup.optimizer_state_bytes) + saved * min(p, setup.optimizer_state_bytes))
    terms = {"weights": weights_bytes(arch, setup), "lora_weights": n * b, "gradients": n * b + saved * p,
             "optimizer_states": moments}
    if saved:
        terms["saved_modules"] = saved * p
    return terms


def _sharded(terms: dict[str, float], arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """Divide what ZeRO/FSDP shards across the data-parallel GPUs; add DDP's bucket copy."""
    n = setup.gpu_count
    out = dict(terms)
    if n > 1 and setup.sharding != "none":
        unsharded_grads = setup.fsdp_no_sync and setup.grad_accum_steps > 1
        for key in ("master_weights", "gradients", "optimizer_states", "lora_weights",
                    "saved_modules"):
            if key in out and not (key == "gradients" and unsharded_grads):
                out[key] /= n
    if n > 1 and setup.sharding in ("zero3", "fsdp"):
        out["weights"] /= n
        # One layer's full weights are gathered at a time, the next one prefetched; wrapping the
        # decoder layers leaves the embedding and lm_head in the root unit, gathered throughout.
        largest = max(arch.decoder_linear_params() / arch.num_layers, arch.layer_linear_params())
        out["gathered_layer"] = 2 * largest * _bytes(setup.precision)
        out["gathered_root"] = (arch.embedding_params() + arch.lm_head_params()) * _bytes(setup.precision)
    if n > 1 and setup.sharding == "none":
        # DDP's default (gradient_as_bucket_view=False) keeps a second copy of the gradients.
        out["ddp_buckets"] = terms["gradients"]
    return out


def memory_terms(arch: Architecture, setup: TrainSetup) -> dict[str, float]:
    """Every term in bytes per GPU, before the peak is assembled."""
    terms = _full_terms(arch, setup) if setup.method == "full" else _lora_terms(arch, setup)
    terms = _sharded(terms, arch, setup)
    if setup.method == "qlora":
        # bitsandbytes dequantises one weight matrix to 16 bit for each matmul; the first one of the
        # backward pass is the lm_head's when it is quantised too
        largest = max(a * b for a, b, _ in arch.linear_shapes().values())
        head = arch.vocab_size * arch.hidden_size if setup.quantized_head else 0
        terms["dequant_buffer"] = max(largest, head) * _bytes(setup.precision)
    if setup.optimizer_impl == "foreach":
        terms["optimizer_temporaries"] = terms["optimizer_states"] / 2  # sqrt(v): one moment's size
    scale = calibration.COMPILE_ACTIVATIONS if setup.compile else 1.0
    terms["activations"] = activation_bytes(arch, setup) * scale
    terms["logits"] = logits_bytes(arch, setup) * scale
    return terms


def peak_allocated_bytes(terms: dict[str, float], setup: TrainSetup) -> float:
    """Bytes PyTorch has allocated at the peak: the start of the backward pass, or the optimizer step.

    Gradients are freed by zero_grad(set_to_none) after each step, so with no accumulation they
    grow while activations are freed; with accumulation they live through every micro batch. The
    step holds every gradient and, with foreach AdamW, its temporary sqrt(v). A paged optimizer's
    states (bitsandbytes' paged_adamw_*) count in neither.
    """
    static = sum(v for k, v in terms.items() if k not in _DYNAMIC and k != "optimizer_temporaries")
    if setup.paged_optimizer:
        # Paged states live in CUDA unified memory: evicted to CPU RAM while the backward pass needs
        # the GPU, paged back in for the step, where the activations are gone (QLoRA, section 3).
        # They slow a step that finds no room, but never run the GPU out of memory.
        static -= terms["optimizer_states"]
    dynamic = terms["activations"] + terms["logits"]
    backward = static + dynamic + (terms["gradients"] if setup.grad_accum_steps > 1 else 0.0)
    step = static + terms["gradients"] + terms.get("optimizer_temporaries", 0.0)
    return max(backward, step)


def verdict_of(peak_gib: float, high_gib: float, capacity_gib: float) -> Verdict:
    """'fits' only when the band's top fits; 'tight' when only the point estimate does."""
    if high_gib <= capacity_gib:
        return "fits"
    return "tight" if peak_gib <= capacity_gib else "does not fit"


def estimate_memory(arch: Architecture, setup: TrainSetup, gpu: GPU) -> MemoryEstimate:
    """The per-GPU memory breakdown, peak, band and verdict for `setup` on `gpu`."""
    terms = memory_terms(arch, setup)
    allocated = peak_allocated_bytes(terms, setup) / GIB
    overhead = {"allocator_reserve": allocated * calibration.RESERVE, "cuda_context": CUDA_CONTEXT_GIB}
    breakdown = {k: round(v / GIB, 3) for k, v in terms.items()}
    breakdown.update({k: round(v, 3) for k, v in overhead.items()})
    peak = allocated + sum(overhead.values())
    low, high = calibration.band(peak, setup, exact=arch.exact and not arch.from_size)
    biggest = max(terms, key=lambda k: terms[k])
    return MemoryEstimate(
        breakdown_gib=breakdown, peak_allocated_gib=round(allocated, 3), peak_gib=round(peak, 3),
        low_gib=round(low, 3), high_gib=round(high, 3), capacity_gib=gpu.memory_gib,
        verdict=verdict_of(peak, high, gpu.memory_gib), biggest=biggest,
        trainable_params=trainable_params(arch, setup), total_params=arch.param_count())
