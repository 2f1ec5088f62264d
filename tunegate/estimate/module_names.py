"""The names `lora.target_modules` can match in a model, known from its architecture alone.

    unmatched_targets(arch, ["q_proj", "k_proj", "v_proj", "o_proj"])   # Phi-3: ["q_proj", "k_proj", "v_proj"]

PEFT adapts every module whose dotted name is a target or ends in "." + target, so a plain target
name matches only where some module's last name part is that name. For the families below the
leaf names of every module `AutoModelForCausalLM` builds are known: containers, norms, dropouts,
activations and rotary embeddings as well as the linear layers, so that a name which matches a
module LoRA cannot wrap is left to the mini-run (TG506), never reported as missing. Each set is the
union over transformers 4 and 5 (5 renamed Mixtral's `block_sparse_moe` to `mlp`, GPT-NeoX's
`embed_out` to `lm_head`, and fused the experts' w1/w2/w3 and gate/up/down_proj into 3-D
parameters): a name the model has under either version is taken as matching. The sets equal what
transformers 5.24 builds on the meta device, plus the transformers-4 names
(tests/estimate/test_lora_targets.py checks both directions against the installed version).
"""
from __future__ import annotations

import re

from tunegate.estimate.architecture import Architecture

# Every Llama-style causal LM: the wrapper, its decoder, one decoder layer and its attention.
_DECODER = frozenset({"model", "lm_head", "embed_tokens", "layers", "norm", "rotary_emb", "self_attn", "mlp",
                      "input_layernorm", "post_attention_layernorm"})
_QKVO = frozenset({"q_proj", "k_proj", "v_proj", "o_proj"})
_GATED = frozenset({"gate_proj", "up_proj", "down_proj", "act_fn"})
_LLAMA = _DECODER | _QKVO | _GATED
_QK_NORMS = frozenset({"q_norm", "k_norm"})
_SANDWICH = frozenset({"pre_feedforward_layernorm", "post_feedforward_layernorm"})  # Gemma 2 and 3
_ROUTED = frozenset({"gate", "experts"})  # the router and the experts (a ModuleList in transformers 4)

LEAF_NAMES: dict[str, frozenset[str]] = {
    "llama": _LLAMA, "mistral": _LLAMA, "qwen2": _LLAMA, "granite": _LLAMA, "gemma": _LLAMA,
    "qwen3": _LLAMA | _QK_NORMS, "gemma2": _LLAMA | _SANDWICH,
    "gemma3_text": _LLAMA | _QK_NORMS | _SANDWICH | {"rotary_emb_local"},
    "phi3": _DECODER | {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "activation_fn",
                        "resid_attn_dropout", "resid_mlp_dropout", "embed_dropout"},
    "phi": frozenset({"model", "lm_head", "embed_tokens", "embed_dropout", "layers", "final_layernorm",
                      "rotary_emb", "self_attn", "mlp", "input_layernorm", "resid_dropout", "q_proj", "k_proj",
                      "v_proj", "dense", "q_layernorm", "k_layernorm", "fc1", "fc2", "activation_fn"}),
    # cross-attention modules (q_attn, crossattention, ln_cross_attn) only with add_cross_attention
    "gpt2": frozenset({"transformer", "lm_head", "wte", "wpe", "drop", "h", "ln_f", "ln_1", "attn", "ln_2", "mlp",
                       "c_attn", "c_proj", "attn_dropout", "resid_dropout", "c_fc", "act", "dropout", "q_attn",
                       "crossattention", "ln_cross_attn"}),
    "gpt_neox": frozenset({"gpt_neox", "embed_out", "lm_head", "embed_in", "emb_dropout", "layers",
                           "final_layer_norm", "rotary_emb", "input_layernorm", "post_attention_layernorm",
                           "post_attention_dropout", "post_mlp_dropout", "attention", "query_key_value", "dense",
                           "attention_dropout", "mlp", "dense_h_to_4h", "dense_4h_to_h", "act"}),
    # ln_attn/ln_mlp: the new decoder architecture (40B, 180B); input_layernorm alone: parallel 7B
    "falcon": frozenset({"transformer", "lm_head", "word_embeddings", "h", "ln_f", "rotary_emb", "maybe_rotary",
                         "self_attention", "mlp", "input_layernorm", "post_attention_layernorm", "ln_attn", "ln_mlp",
                         "query_key_value", "dense", "attention_dropout", "dense_h_to_4h", "dense_4h_to_h", "act"}),
    "mixtral": _DECODER | _QKVO | _ROUTED | {"act_fn", "block_sparse_moe", "w1", "w2", "w3"},
    "qwen2_moe": _LLAMA | _ROUTED | {"shared_expert", "shared_expert_gate"},
    "qwen3_moe": _LLAMA | _QK_NORMS | _ROUTED,
    **dict.fromkeys(("deepseek_v2", "deepseek_v3"), _DECODER | _GATED | _ROUTED | {
        "q_proj", "q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj",
        "o_proj", "shared_experts"}),
}

# A target decided here: a Python attribute name. A dotted path, a number (a ModuleList index) or a
# pattern is matched against full module paths, which the architecture alone does not give.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def leaf_names(arch: Architecture) -> frozenset[str] | None:
    """Every module's last name part, or None where they are not known exactly.

    Not known: an architecture read as a guess, a multimodal model's towers, or a reading whose
    linear modules are not the family's (phi-2's first release, built only by its own code).
    """
    names = LEAF_NAMES.get(arch.model_type)
    if names is None or not arch.exact or arch.tower_params:
        return None
    shared = arch.experts.shared_linear(arch.hidden_size) if arch.experts is not None else []
    return names if set(arch.linear_shapes()) | {m.name for m in shared} <= names else None


def unmatched_targets(arch: Architecture, targets: list[str] | str) -> list[str]:
    """The plain target names no module of the model is named; [] when none, or nothing can be decided."""
    names = leaf_names(arch)
    if names is None or isinstance(targets, str):
        return []
    return [t for t in targets if _PLAIN.fullmatch(t) and t not in names]
