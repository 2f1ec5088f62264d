"""Bytes of activations a Llama-style decoder keeps for the backward pass.

After Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198, section 4.1): count every tensor autograd saves in one layer, per token. Their
GPT layer saves 34·s·b·h + 5·a·s²·b bytes; a Llama layer differs in four ways, each counted below:

* RMSNorm in Hugging Face upcasts its input to fp32 and autograd keeps that copy (4 bytes/value);
* the gated MLP keeps gate, SiLU and up outputs (three tensors of width `intermediate_size`);
* a frozen linear layer needs no copy of its input (no weight gradient), a trained one does;
  PEFT casts each adapted module's input to the fp32 adapter dtype and keeps that copy;
* flash attention and SDPA keep q, k, v, the output and a log-sum-exp row, never the s×s
  score matrix; eager attention keeps the fp32 softmax and its bf16 cast (the 5·a·s² term).

The logits are separate: b·s·V values, which for a 128k vocabulary outweigh a whole layer.
"""
from __future__ import annotations

from tunegate.estimate.architecture import Architecture, targeted_modules
from tunegate.estimate.setup import TrainSetup

FP32 = 4
# Cross-entropy in Hugging Face upcasts the logits: at the start of the backward pass the bf16
# logits (held by the caller's `outputs`), the saved fp32 log-softmax, the fp32 gradient from
# the NLL and the fp32 gradient of the log-softmax input are alive at once: a + 12 bytes/value.
LOSS_FP32_BUFFERS = 3
# torchtune's CEWithChunkedOutputLoss: bf16 chunks and their saved fp32 log-softmax stay alive,
# but the backward gradients exist for one chunk of 8 at a time.
LOSS_CHUNKS = 8


def act_bytes(setup: TrainSetup) -> int:
    """Bytes per activation value: 16-bit under bf16/fp16 (QLoRA computes in bf16), else 4."""
    return 4 if setup.precision == "fp32" else 2


def _trained(module: str, arch: Architecture, setup: TrainSetup) -> tuple[bool, bool]:
    """(weight trained, LoRA-adapted) for one per-layer linear module."""
    if setup.method == "full":
        return True, False
    return False, module in targeted_modules(arch, setup.lora_targets)


def _adapter_bytes(setup: TrainSetup) -> int:
    """Bytes per value of what an adapter's lora_A keeps of its input.

    PEFT casts the input to the adapter dtype; without autocast that fp32 copy is what autograd
    keeps, under autocast the matmul keeps its own 16-bit cast instead.
    """
    fp32_cast = setup.adapter_dtype == "fp32" and not setup.autocast
    return FP32 if fp32_cast or setup.precision == "fp32" else 2


def _input_copy(modules: list[str], width: int, arch: Architecture, setup: TrainSetup) -> int:
    """Bytes per token kept as the input of `modules`, which all read the same tensor."""
    a = act_bytes(setup)
    trained = any(_trained(m, arch, setup)[0] for m in modules)
    adapted = [m for m in modules if _trained(m, arch, setup)[1]]
    total = a * width if trained else 0  # one shared copy for the weight gradients
    if not adapted:
        return total
    ab = _adapter_bytes(setup)
    total += len(adapted) * ab * setup.lora_r  # lora_A outputs, kept for lora_B
    if setup.lora_dropout > 0:
        return total + len(adapted) * (ab + 1) * width  # each module's own dropout output + mask
    if ab != a:
        return total + len(adapted) * ab * width  # each module's own cast copy
    return total + (0 if trained else a * width)  # lora_A keeps the shared input


def attention_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Bytes per token one layer's attention core keeps (no projections' inputs)."""
    a = act_bytes(setup)
    if setup.attention == "flash_attention_2":
        kv = 2 * arch.kv_dim  # GQA handled inside the kernel
    else:
        kv = 2 * arch.q_dim  # transformers repeats k/v to every query head before SDPA/eager
    saved = a * (arch.q_dim + kv)
    if setup.attention == "eager":
        # fp32 softmax output plus its bf16 cast, one row of s scores per head and token
        return saved + (FP32 + a) * arch.num_heads * setup.seq_len
    return saved + a * arch.q_dim + FP32 * arch.num_heads  # output O and log-sum-exp


def layer_bytes_per_token(arch: Architecture, setup: TrainSetup) -> int:
    """Bytes one decoder layer keeps per token without gradient checkpointing."""
    a, h, i = act_bytes(setup), arch.hidden_size, arch.intermediate_size
    total = 2 * FP32 * h  # the two RMSNorms' fp32 copies of their inputs
    if setup.method == "full":
        total += 2 * a * h  # normalised input kept for the trained norm weights
    total += _input_copy(["q_proj", "k_proj", "v_proj"], h, arch, setup)
    total += attention_bytes(arch, setup)
    total += _input_copy(["o_proj"], arch.q_dim, arch, setup)
    total += _input_copy(["gate_proj", "up_proj"], h, arch, setup)
    total += 3 * a * i  # gate output (SiLU input), SiLU output, up output
    total += _input_copy(["down_proj"], i, arch, setup)
    return total


def activation_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Activation bytes per GPU for one micro batch, with or without gradient checkpointing."""
    tokens = setup.tokens_per_micro_batch
    per_layer = layer_bytes_per_token(arch, setup) * tokens
    # The final norm's fp32 copy, and its output when the lm_head is trained.
    head = (FP32 + (act_bytes(setup) if setup.method == "full" else 0)) * arch.hidden_size * tokens
    if setup.gradient_checkpointing:
        # Only each layer's input is kept; in the backward pass one layer is recomputed at a time.
        return arch.num_layers * act_bytes(setup) * arch.hidden_size * tokens + per_layer + head
    return arch.num_layers * per_layer + head


def logits_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Bytes of the logits and the loss's buffers at the start of the backward pass."""
    values = setup.tokens_per_micro_batch * arch.vocab_size
    a = act_bytes(setup)
    if setup.loss == "chunked":
        return values * (a + FP32) + values * 2 * FP32 // LOSS_CHUNKS
    return values * (a + LOSS_FP32_BUFFERS * FP32)
