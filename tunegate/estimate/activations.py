"""Bytes of activations a decoder keeps for the backward pass, per token, module by module.

After Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198, section 4.1): count every tensor autograd saves in one layer, per token. Their
GPT layer saves 34·s·b·h + 5·a·s²·b bytes; Hugging Face decoders differ in ways counted below:

* RMSNorm upcasts its input to fp32 and autograd keeps that copy (4 bytes/value); LayerNorm runs
  in fp32 under autocast and keeps its fp32 input too (16-bit without autocast);
* the MLP keeps its activation's input(s) and output: a gated SiLU MLP (Llama) keeps gate, SiLU
  and up outputs; transformers' Python "gelu_new" (GPT-2, phi) keeps four tensors of its width;
* a frozen linear layer needs no copy of its input (no weight gradient), a trained one does; linear
  modules reading the same tensor (q, k and v) share one copy; PEFT casts each adapted module's
  input to the fp32 adapter dtype and keeps that copy;
* flash attention and SDPA keep q, k, v, the output and a log-sum-exp row, never the s×s
  score matrix; eager attention keeps the fp32 softmax and its 16-bit cast (the 5·a·s² term);
* a mixture-of-experts layer keeps, per token, what its top_k experts keep, their outputs (for the
  routing-weight product) and the router's fp32 softmax.

The logits are separate: b·s·V values, which for a 128k vocabulary outweigh a whole layer.
"""
from __future__ import annotations

from tunegate.estimate.architecture import ACTIVATION_TENSORS, Architecture, Linear, targeted_modules
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


def _adapter_bytes(setup: TrainSetup) -> int:
    """Bytes per value of what an adapter's lora_A keeps of its input.

    PEFT casts the input to the adapter dtype; without autocast that fp32 copy is what autograd
    keeps, under autocast the matmul keeps its own 16-bit cast instead.
    """
    fp32_cast = setup.adapter_dtype == "fp32" and not setup.autocast
    return FP32 if fp32_cast or setup.precision == "fp32" else 2


def _input_copy(modules: list[Linear], width: int, adapted: set[str], setup: TrainSetup) -> int:
    """Bytes per token kept as the input of `modules`, which all read the same tensor."""
    if not modules:
        return 0
    a = act_bytes(setup)
    # a trained weight needs its input for its gradient; old bitsandbytes kept 4-bit layers' inputs
    kept = a if setup.method == "full" else setup.qlora_input_bytes if setup.method == "qlora" else 0
    lora = [m for m in modules if setup.method != "full" and m.name in adapted]
    total = kept * width  # one shared copy
    if not lora:
        return total
    ab = _adapter_bytes(setup)
    total += len(lora) * ab * setup.lora_r  # lora_A outputs, kept for lora_B
    if setup.lora_dropout > 0:
        return total + len(lora) * (ab + 1) * width  # each module's own dropout output + mask
    if ab != a:
        return total + len(lora) * ab * width  # each module's own cast copy
    return total + (0 if kept == a else a * width)  # lora_A keeps the shared input


def attention_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Bytes per token one layer's attention core keeps (no projections' inputs)."""
    a = act_bytes(setup)
    if setup.qkv_fused_saved:
        # the fused q/k/v output, roped copies of q and k, SDPA's output and log-sum-exp
        fused = arch.q_dim + 2 * arch.kv_dim
        return a * (fused + 2 * arch.q_dim + arch.kv_dim) + FP32 * arch.num_heads
    if setup.attention == "flash_attention_2":
        kv = 2 * arch.kv_dim  # GQA handled inside the kernel
    else:
        kv = 2 * arch.q_dim  # with a padding mask transformers repeats k/v to every head before SDPA
    saved = a * (arch.q_dim + kv)
    if arch.qk_norm:
        saved += FP32 * (arch.q_dim + arch.kv_dim)  # the q/k RMSNorms' fp32 copies
    saved += FP32 * (arch.q_latent_dim + arch.kv_latent_dim)  # MLA's latent RMSNorms' fp32 copies
    if setup.attention == "eager":
        # fp32 softmax output plus its bf16 cast, one row of s scores per head and token
        return saved + (FP32 + a) * arch.num_heads * setup.seq_len
    return saved + a * arch.q_dim + FP32 * arch.num_heads  # output O and log-sum-exp


def norm_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Bytes per token one norm keeps: its fp32 input copy, plus its output when its weight trains."""
    h, a = arch.hidden_size, act_bytes(setup)
    kept = FP32 * h if arch.norm == "rms" or setup.autocast or setup.precision == "fp32" else a * h
    return kept + (a * h if setup.method == "full" else 0)


def _mlp_act_bytes(arch: Architecture, width: int, setup: TrainSetup) -> int:
    """What the activation (and the gate product) keeps, per token, at hidden width `width`."""
    a, kept = act_bytes(setup), ACTIVATION_TENSORS.get(arch.activation, 2)
    return (kept + 2 if arch.gated_mlp else kept) * a * width


def _group(modules: list[Linear], reads: str) -> list[Linear]:
    return [m for m in modules if m.reads == reads]


def expert_bytes_per_token(arch: Architecture, setup: TrainSetup) -> int:
    """One MoE layer's experts, router and shared expert, per token (attention not included)."""
    e, h, a = arch.experts, arch.hidden_size, act_bytes(setup)
    full = setup.method == "full"
    per_expert = 3 * a * e.intermediate_size + a * h  # gate/up/act product; output for the routing weight
    if full:
        per_expert += a * h + a * e.intermediate_size  # each expert's inputs for its weight gradients
    total = e.top_k * per_expert + FP32 * e.num_experts  # the router's fp32 softmax
    if e.shared_intermediate_size:
        total += 3 * a * e.shared_intermediate_size + (a * h if full else 0)
    return total + (a * h if full else 0)  # the router's input, when its weight trains


def layer_bytes_per_token(arch: Architecture, setup: TrainSetup, moe: bool = False) -> int:
    """Bytes one decoder layer keeps per token without gradient checkpointing."""
    adapted = set(targeted_modules(arch, setup.lora_targets)) if setup.method != "full" else set()
    mlp = [] if moe else arch.mlp
    modules = arch.attention + mlp
    total = arch.norms_per_layer * norm_bytes(arch, setup)
    total += _input_copy(_group(modules, "attn_in"), arch.hidden_size, adapted, setup)
    total += attention_bytes(arch, setup)
    total += _input_copy(_group(modules, "attn_out"), arch.q_dim, adapted, setup)
    total += _input_copy(_group(modules, "q_latent"), arch.q_latent_dim, adapted, setup)
    total += _input_copy(_group(modules, "kv_latent"), arch.kv_latent_dim, adapted, setup)
    if moe:
        return total + expert_bytes_per_token(arch, setup)
    total += _input_copy(_group(modules, "mlp_in"), arch.hidden_size, adapted, setup)
    total += _mlp_act_bytes(arch, arch.intermediate_size, setup)
    total += _input_copy(_group(modules, "mlp_act"), arch.intermediate_size, adapted, setup)
    return total


def _largest_layer(arch: Architecture, setup: TrainSetup) -> int:
    dense = layer_bytes_per_token(arch, setup) if arch.dense_layers else 0
    moe = layer_bytes_per_token(arch, setup, moe=True) if arch.is_moe else 0
    return max(dense, moe)


def _all_layers(arch: Architecture, setup: TrainSetup) -> int:
    dense = arch.dense_layers * layer_bytes_per_token(arch, setup) if arch.dense_layers else 0
    moe = arch.experts.layers * layer_bytes_per_token(arch, setup, moe=True) if arch.is_moe else 0
    return dense + moe


def activation_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Activation bytes per GPU for one micro batch, with or without gradient checkpointing."""
    tokens = setup.tokens_per_micro_batch
    # The final norm's fp32 copy, and its output when the lm_head is trained.
    head = norm_bytes(arch, setup) * tokens
    if setup.gradient_checkpointing:
        # Only each layer's input is kept; in the backward pass one layer is recomputed at a time.
        kept = arch.num_layers * act_bytes(setup) * arch.hidden_size * tokens
        return kept + _largest_layer(arch, setup) * tokens + head
    return _all_layers(arch, setup) * tokens + head


def logits_bytes(arch: Architecture, setup: TrainSetup) -> int:
    """Bytes of the logits and the loss's buffers at the start of the backward pass."""
    values = setup.tokens_per_micro_batch * arch.vocab_size
    a = act_bytes(setup) * (2 if arch.logit_softcap else 1)  # Gemma-2 keeps tanh's output too
    if setup.loss == "chunked":
        return values * (a + FP32) + values * 2 * FP32 // LOSS_CHUNKS
    return values * (a + LOSS_FP32_BUFFERS * FP32)
