"""What the estimate needs to know about a training run, independent of the spec's layout.

A spec describes a LoRA, QLoRA or full fine-tune (`training.method`); the accuracy benchmark also
models other frameworks' recipes, so the few knobs the spec does not expose (chunked loss,
autocast, adapter dtype) live here with the defaults tunegate's own trainer uses. A new knob is a
field here with its default, plus one line in `setup_from_spec` when the spec gains it.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tunegate.estimate.architecture import Architecture
from tunegate.spec.model import EIGHT_BIT_OPTIMIZERS, Spec
from tunegate.spec.model_classes import asked_for, attention_support, effective_attention

Precision = Literal["bf16", "fp16", "fp32"]
Attention = Literal["sdpa", "flash_attention_2", "eager"]
Sharding = Literal["none", "zero2", "zero3", "fsdp"]


class TrainSetup(BaseModel):
    """One training configuration, as the memory and FLOP models see it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["lora", "qlora", "full"] = "lora"
    precision: Precision = "bf16"
    micro_batch_size: int = Field(1, gt=0)
    seq_len: int = Field(2048, gt=0)
    grad_accum_steps: int = Field(1, gt=0)
    gradient_checkpointing: bool = False
    attention: Attention = "sdpa"
    compile: bool = False
    compile_mode: Literal["default", "reduce-overhead", "max-autotune"] = "default"
    lora_r: int = Field(16, gt=0)
    lora_targets: list[str] | Literal["all-linear"] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    lora_dropout: float = 0.0
    gpu_count: int = Field(1, gt=0)
    sharding: Sharding = "none"
    # FSDP under no_sync (LitGPT's no_backward_sync, while accumulating) keeps the gradients
    # unsharded until the last micro batch; without it they are reduce-scattered each time.
    fsdp_no_sync: bool = False
    # Full fine-tuning only. "fp32": mixed precision with fp32 master weights and fp32 AdamW
    # moments (ZeRO paper accounting: 2 + 2 + 12 bytes per parameter). "param_dtype": weights,
    # gradients and moments all in the training precision (torchtune's and PEFT's benchmark
    # recipes: 2 + 2 + 4 bytes per parameter in bf16).
    optimizer_state: Literal["fp32", "param_dtype"] = "fp32"
    # AdamW's implementation: torch's foreach AdamW (torch.optim.AdamW's default) allocates
    # sqrt(v) for every parameter at once during the step; the fused kernel (the HF Trainer's
    # default optimizer with torch >= 2.8) allocates nothing.
    optimizer_impl: Literal["fused", "foreach"] = "fused"
    # "chunked": cross-entropy computed over output chunks (torchtune's CEWithChunkedOutputLoss).
    loss: Literal["full", "chunked"] = "full"
    # Hugging Face Trainer runs bf16/fp16 under torch.autocast; scripts that load the model in
    # bf16 and call it directly (PEFT's and torchtune's benchmarks) do not.
    autocast: bool = True
    # PEFT keeps adapters in fp32 (autocast_adapter_dtype=True); torchtune keeps them in bf16.
    adapter_dtype: Literal["fp32", "param"] = "fp32"
    # QLoRA's storage: NF4 with double-quantised constants (bitsandbytes' bnb_4bit_use_double_quant,
    # the QLoRA recipe) or without; whether the lm_head is quantised too (Lightning's
    # BitsandbytesPrecision converts every linear layer; transformers skips the lm_head).
    nf4_double_quant: bool = True
    quantized_head: bool = False
    # Bytes per value of every 4-bit layer's input kept for the backward pass: 0 with bitsandbytes
    # >= 0.43.2 (PR #1270: the frozen weight needs no gradient, so the input is not kept); before
    # it the input was kept, as a 16-bit tensor (2) or, where the layer computes in fp32 (LitGPT's
    # quantised layers), as an fp32 copy (4).
    qlora_input_bytes: Literal[0, 2, 4] = 0
    # LitGPT computes q, k and v in one fused projection and slices v out of it: the fused output
    # stays alive through that view, and SDPA gets k/v at their grouped width (no repeat).
    qkv_fused_saved: bool = False
    # Bytes per optimizer moment of a trained parameter: 4 for AdamW in fp32, 1 for bitsandbytes'
    # 8-bit AdamW (block-wise quantised states, Dettmers et al. 2022; paged ones too: paging moves
    # states to the CPU only under memory pressure).
    optimizer_state_bytes: float = 4.0
    # bitsandbytes' paged optimizers keep their states in CUDA unified memory, which the driver
    # evicts to CPU RAM under pressure (the QLoRA paper's paged optimizers, section 3): during the
    # backward pass's peak they need no GPU memory; at the step they are paged back in.
    paged_optimizer: bool = False
    # Whether a mixture of experts' experts are nn.Linear modules: in transformers 4 they are, so
    # bitsandbytes quantises them with the rest and LoRA target names (all-linear, gate_proj,
    # Mixtral's w1) adapt every expert; transformers 5 fuses them into 3-D parameters, which stay
    # in 16 bit (bitsandbytes issue #1849) and which no target name matches.
    linear_experts: bool = False
    int8_base: bool = False  # the frozen base's linear layers held in 8 bit (LLM.int8, load_in_8bit)
    # PEFT's prepare_model_for_kbit_training (tunegate's trainer, axolotl and TRL call it on a 4-bit or
    # 8-bit base) casts every parameter it did not quantise to fp32: embeddings, lm_head, norms
    # (+1.96 GiB on Llama-3.1-8B, +3.9 GiB on 70B; issue 31). Off in the published rows' setups.
    kbit_fp32_rest: bool = False
    packing: bool = False  # rows full of records (training.packing): a step trains batch x seq_len tokens
    saved_module_params: int = 0  # parameters of lora.modules_to_save, trained in full beside the adapter

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.micro_batch_size * self.seq_len

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step over every GPU."""
        return self.micro_batch_size * self.grad_accum_steps * self.gpu_count


def base_quantization(spec: Spec, arch: Architecture | None = None) -> str:
    """How the base is loaded: as a pre-quantised checkpoint is stored, else as model.quantization says."""
    if arch is not None and arch.checkpoint_quantization != "none":
        return arch.checkpoint_quantization
    return spec.model.quantization


def method_of(spec: Spec, arch: Architecture | None = None) -> str:
    """lora, qlora or full: a 4-bit base (model.quantization: 4bit, or a 4-bit checkpoint) makes LoRA QLoRA."""
    method = spec.training.method
    return "qlora" if method == "lora" and base_quantization(spec, arch) == "4bit" else method


# Moments per trained value: AdamW keeps two; SGD without momentum (the HF Trainer's "sgd") none;
# Adafactor (no first moment by default) keeps factored row and column statistics, negligible.
_STATELESS_OPTIMIZERS = ("sgd", "adafactor")


def experts_are_linear_modules() -> bool:
    """Whether the installed transformers builds MoE experts as nn.Linear modules (major version < 5).

    Read from the installed package's metadata, never by importing it; without transformers the
    estimate assumes the version `pip install 'tunegate[train]'` installs now (5: fused experts).
    """
    major = _installed_major("transformers")
    return major is not None and major < 5


def _installed_major(package: str) -> int | None:
    """The major version of an installed package, from the `NAME-VERSION.dist-info` folder beside
    it: importlib.metadata would cost every check its imports (email, zipfile, csv: ~5 % of a
    rejection's instructions, tests/cli/test_start_up.py)."""
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        return None
    for folder in found.submodule_search_locations:
        for info in Path(folder).parent.glob(f"{package}-*.dist-info"):
            major = info.name[len(package) + 1:].split(".")[0]
            if major.isdigit():
                return int(major)
    return None


def _state_bytes(optimizer: str) -> float:
    if optimizer in _STATELESS_OPTIMIZERS:
        return 0.0
    return 1.0 if optimizer in EIGHT_BIT_OPTIMIZERS else 4.0


def planned_attention(spec: Spec, arch: Architecture | None) -> str:
    """The kernel the run loads: the spec's, or, left unset, the installed transformers' fallback
    for this model class (Gemma-2 refuses sdpa: eager, whose score matrix the memory model counts)."""
    t = spec.training
    support = attention_support(arch.model_type) if arch is not None else None
    return effective_attention(t.attention, support, asked_for(t), spec.model.hub_kernels)


def setup_from_spec(spec: Spec, saved_module_params: int = 0, arch: Architecture | None = None) -> TrainSetup:
    """The TrainSetup a spec describes (`saved_module_params`: the size of lora.modules_to_save; `arch`:
    the model, whose checkpoint may be stored quantised)."""
    t = spec.training
    prequantised = arch is not None and arch.checkpoint_quantization == "4bit"
    return TrainSetup(
        method=method_of(spec, arch),
        nf4_double_quant=arch.checkpoint_double_quant if prequantised else True,
        optimizer_state="fp32" if t.master_weights == "fp32" else "param_dtype",
        optimizer_state_bytes=_state_bytes(t.optimizer), paged_optimizer=t.optimizer.startswith("paged_"),
        linear_experts=experts_are_linear_modules(),
        int8_base=base_quantization(spec, arch) == "8bit", kbit_fp32_rest=True, packing=t.packing,
        saved_module_params=0 if t.method == "full" else saved_module_params,
        precision=t.precision, micro_batch_size=t.micro_batch_size, seq_len=t.max_seq_len,
        grad_accum_steps=t.grad_accum_steps, gradient_checkpointing=t.gradient_checkpointing,
        attention=planned_attention(spec, arch), compile=t.compile, compile_mode=t.compile_mode, lora_r=spec.lora.r,
        lora_targets=spec.lora.target_modules, lora_dropout=spec.lora.dropout,
        gpu_count=spec.hardware.count, sharding=t.sharding,
    )
