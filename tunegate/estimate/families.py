"""Each architecture's config.json read into the one `Architecture` shape the estimate counts.

    arch = load_architecture("meta-llama/Llama-3.1-8B")    # a shipped, local, cached or hub config
    arch = from_config(json.load(open("config.json")))

Every family reads its own key names (GPT-2's `n_embd`/`n_layer`, Falcon's `n_head`), its own
defaults where the config is silent (Gemma ties its embedding unless told otherwise), and its own
module names, biases, norms and experts. The counts agree with transformers' own models built on
the meta device (tests/estimate/test_param_counts.py). A model type not listed is read as a
Llama-style decoder and marked `exact=False`: the estimate says so and the meta-device count
(`tunegate.estimate.meta_count`) replaces the guess where transformers is installed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tunegate.estimate.architecture import Architecture, Experts, Linear
from tunegate.estimate.config_files import find_config
from tunegate.spec.checkpoint import stored_quantization
from tunegate.spec.remote_code import custom_classes

# Model types whose default is a tied lm_head (transformers' config classes), when the config is silent.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3_text", "gpt2", "falcon", "starcoder2", "cohere"}
_LLAMA_LIKE = {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "granite"}


def _value(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def _positive(cfg: dict[str, Any], *keys: str, default: int | None = None) -> int:
    value = _value(cfg, *keys, default=default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"config.json: '{keys[0]}' must be a positive integer, got {value!r}")
    return value


def _count(cfg: dict[str, Any], key: str, default: int, minimum: int = 1) -> int:
    """An optional integer key (absent or null: `default`); anything but an integer >= minimum is refused."""
    value = cfg.get(key)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"config.json: '{key}' must be {what}, got {value!r}")
    return value


def _layer_indices(cfg: dict[str, Any], key: str) -> set[int]:
    value = cfg.get(key) or []
    if not isinstance(value, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        raise ValueError(f"config.json: '{key}' must be a list of layer indices, got {value!r}")
    return set(value)


def _tied(cfg: dict[str, Any], kind: str) -> bool:
    return bool(_value(cfg, "tie_word_embeddings", default=kind in _TIED_BY_DEFAULT))


def _attention(h: int, q: int, kv: int, bias: bool, o_bias: bool) -> list[Linear]:
    return [Linear(name="q_proj", in_features=h, out_features=q, bias=bias, reads="attn_in"),
            Linear(name="k_proj", in_features=h, out_features=kv, bias=bias, reads="attn_in"),
            Linear(name="v_proj", in_features=h, out_features=kv, bias=bias, reads="attn_in"),
            Linear(name="o_proj", in_features=q, out_features=h, bias=o_bias, reads="attn_out")]


def _gated_mlp(h: int, i: int, bias: bool = False, reads: str = "mlp_in") -> list[Linear]:
    return [Linear(name="gate_proj", in_features=h, out_features=i, bias=bias, reads=reads),
            Linear(name="up_proj", in_features=h, out_features=i, bias=bias, reads=reads),
            Linear(name="down_proj", in_features=i, out_features=h, bias=bias, reads="mlp_act")]


def _plain_mlp(names: tuple[str, str], h: int, i: int, bias: bool, reads: str) -> list[Linear]:
    return [Linear(name=names[0], in_features=h, out_features=i, bias=bias, reads=reads),
            Linear(name=names[1], in_features=i, out_features=h, bias=bias, reads="mlp_act")]


def _heads(cfg: dict[str, Any], h: int, head_keys: tuple[str, ...] = ("num_attention_heads",)) -> tuple[int, int, int]:
    heads = _positive(cfg, *head_keys)
    kv = _count(cfg, "num_key_value_heads", heads)
    head_dim = _count(cfg, "head_dim", h // heads)
    return heads, kv, head_dim


def _common(cfg: dict[str, Any], kind: str, h: int, layers: int, heads: tuple[int, int, int],
            vocab_keys: tuple[str, ...] = ("vocab_size",)) -> dict[str, Any]:
    return {"model_type": kind, "vocab_size": _positive(cfg, *vocab_keys), "hidden_size": h,
            "num_layers": layers, "num_heads": heads[0], "num_kv_heads": heads[1], "head_dim": heads[2],
            "tie_embeddings": _tied(cfg, kind)}


def _llama_like(cfg: dict[str, Any], kind: str) -> Architecture:
    """Llama, Mistral, Qwen2/3, Gemma 1/2/3, Granite: GQA attention, gated MLP, RMSNorm."""
    h, layers = _positive(cfg, "hidden_size"), _positive(cfg, "num_hidden_layers")
    heads = _heads(cfg, h)
    i = _positive(cfg, "intermediate_size")
    bias = bool(cfg.get("attention_bias", False))
    qkv_bias = bias or kind == "qwen2"  # Qwen2's q/k/v carry a bias no config key declares
    qk_norm = kind in ("qwen3", "gemma3_text")
    norms = 4 if kind in ("gemma2", "gemma3_text") else 2
    act = str(_value(cfg, "hidden_activation", "hidden_act", default="silu"))
    return Architecture(
        **_common(cfg, kind, h, layers, heads),
        intermediate_size=i, attention=_attention(h, heads[0] * heads[2], heads[1] * heads[2], qkv_bias, bias),
        mlp=_gated_mlp(h, i, bool(cfg.get("mlp_bias", False))), activation=act, norms_per_layer=norms,
        layer_norm_params=norms * h + (2 * heads[2] if qk_norm else 0), final_norm_params=h,
        qk_norm=qk_norm, logit_softcap=bool(cfg.get("final_logit_softcapping")),
        exact=kind in _LLAMA_LIKE)


def _phi3(cfg: dict[str, Any], kind: str) -> Architecture:
    """Phi-3: Llama-style, with q/k/v fused into qkv_proj and gate/up into gate_up_proj."""
    h, layers = _positive(cfg, "hidden_size"), _positive(cfg, "num_hidden_layers")
    heads = _heads(cfg, h)
    i = _positive(cfg, "intermediate_size")
    q, kv = heads[0] * heads[2], heads[1] * heads[2]
    attention = [Linear(name="qkv_proj", in_features=h, out_features=q + 2 * kv, reads="attn_in"),
                 Linear(name="o_proj", in_features=q, out_features=h, reads="attn_out")]
    mlp = [Linear(name="gate_up_proj", in_features=h, out_features=2 * i, reads="mlp_in"),
           Linear(name="down_proj", in_features=i, out_features=h, reads="mlp_act")]
    return Architecture(**_common(cfg, kind, h, layers, heads), intermediate_size=i, attention=attention,
                        mlp=mlp, activation=str(cfg.get("hidden_act", "silu")), layer_norm_params=2 * h,
                        final_norm_params=h)


def _phi(cfg: dict[str, Any], kind: str) -> Architecture:
    """Phi-1/1.5/2: one LayerNorm feeds attention and MLP in parallel; biases everywhere."""
    legacy = kind == "phi-msft"  # phi-2's first release: GPT-2's key names, fused Wqkv
    h = _positive(cfg, "n_embd" if legacy else "hidden_size")
    layers = _positive(cfg, "n_layer" if legacy else "num_hidden_layers")
    heads = _heads(cfg, h, ("n_head",) if legacy else ("num_attention_heads",))
    i = _count(cfg, "n_inner" if legacy else "intermediate_size", 4 * h)
    q, kv = heads[0] * heads[2], heads[1] * heads[2]
    if legacy:
        attention = [Linear(name="Wqkv", in_features=h, out_features=q + 2 * kv, bias=True, reads="attn_in"),
                     Linear(name="out_proj", in_features=q, out_features=h, bias=True, reads="attn_out")]
    else:
        attention = _attention(h, q, kv, True, True)[:3] + [
            Linear(name="dense", in_features=q, out_features=h, bias=True, reads="attn_out")]
    qk_norm = bool(cfg.get("qk_layernorm", False))
    act = str(_value(cfg, "activation_function", "hidden_act", default="gelu_new"))
    return Architecture(
        **_common(cfg, "phi", h, layers, heads), intermediate_size=i, attention=attention,
        mlp=_plain_mlp(("fc1", "fc2"), h, i, True, "attn_in"), activation=act, gated_mlp=False,
        norm="layer", norms_per_layer=1, layer_norm_params=2 * h + (4 * heads[2] if qk_norm else 0),
        final_norm_params=2 * h, qk_norm=qk_norm, lm_head_bias=True)


def _gpt2(cfg: dict[str, Any], kind: str) -> Architecture:
    """GPT-2: fused c_attn, learned positions, LayerNorms, a tied lm_head."""
    h, layers = _positive(cfg, "n_embd", "hidden_size"), _positive(cfg, "n_layer", "num_hidden_layers")
    heads = _positive(cfg, "n_head", "num_attention_heads")
    i = _count(cfg, "n_inner", 4 * h)
    attention = [Linear(name="c_attn", in_features=h, out_features=3 * h, bias=True, reads="attn_in"),
                 Linear(name="c_proj", in_features=h, out_features=h, bias=True, reads="attn_out")]
    return Architecture(
        **_common(cfg, kind, h, layers, (heads, heads, h // heads)), intermediate_size=i,
        attention=attention, mlp=_plain_mlp(("c_fc", "c_proj"), h, i, True, "mlp_in"),
        activation=str(cfg.get("activation_function", "gelu_new")), gated_mlp=False, norm="layer",
        layer_norm_params=4 * h, final_norm_params=2 * h,
        position_embeddings=_positive(cfg, "n_positions", default=1024))


def _gpt_neox(cfg: dict[str, Any], kind: str) -> Architecture:
    """GPT-NeoX (Pythia, StableLM-alpha): fused query_key_value, two LayerNorms, biases."""
    h, layers = _positive(cfg, "hidden_size"), _positive(cfg, "num_hidden_layers")
    heads = _positive(cfg, "num_attention_heads")
    i = _positive(cfg, "intermediate_size")
    bias = bool(cfg.get("attention_bias", True))
    attention = [Linear(name="query_key_value", in_features=h, out_features=3 * h, bias=bias, reads="attn_in"),
                 Linear(name="dense", in_features=h, out_features=h, bias=bias, reads="attn_out")]
    return Architecture(
        **_common(cfg, kind, h, layers, (heads, heads, h // heads)), intermediate_size=i,
        attention=attention, mlp=_plain_mlp(("dense_h_to_4h", "dense_4h_to_h"), h, i, True, "mlp_in"),
        activation=str(cfg.get("hidden_act", "gelu")), gated_mlp=False, norm="layer",
        layer_norm_params=4 * h, final_norm_params=2 * h)


def _falcon(cfg: dict[str, Any], kind: str) -> Architecture:
    """Falcon: multi-query (7B) or grouped (40B/180B) fused query_key_value, parallel attention."""
    h = _positive(cfg, "hidden_size")
    layers = _positive(cfg, "num_hidden_layers", "n_layer")
    heads = _positive(cfg, "num_attention_heads", "n_head")
    new_arch, head_dim = bool(cfg.get("new_decoder_architecture")), h // heads
    kv = _count(cfg, "num_kv_heads", heads) if new_arch else (1 if cfg.get("multi_query", True) else heads)
    i, bias = _count(cfg, "ffn_hidden_size", 4 * h), bool(cfg.get("bias", False))
    parallel = bool(cfg.get("parallel_attn", True))
    attention = [Linear(name="query_key_value", in_features=h, out_features=(heads + 2 * kv) * head_dim,
                        bias=bias, reads="attn_in"),
                 Linear(name="dense", in_features=h, out_features=h, bias=bias, reads="attn_out")]
    norms = _count(cfg, "num_ln_in_parallel_attn", 2) if new_arch else (1 if parallel else 2)
    mlp_reads = "attn_in" if parallel and norms == 1 else "mlp_in"
    return Architecture(
        **_common(cfg, kind, h, layers, (heads, kv, head_dim)), intermediate_size=i, attention=attention,
        mlp=_plain_mlp(("dense_h_to_4h", "dense_4h_to_h"), h, i, bias, mlp_reads),
        activation=str(cfg.get("activation", "gelu")), gated_mlp=False, norm="layer",
        norms_per_layer=norms, layer_norm_params=2 * h * norms, final_norm_params=2 * h)


def _moe(cfg: dict[str, Any], kind: str) -> Architecture:
    """Mixtral, Qwen2-MoE, Qwen3-MoE: Llama-style attention, experts in (some) layers."""
    dense = _llama_like(cfg, "qwen2" if kind == "qwen2_moe" else "qwen3" if kind == "qwen3_moe" else "mistral")
    layers = dense.num_layers
    if kind == "mixtral":
        experts = Experts(num_experts=_positive(cfg, "num_local_experts"), top_k=_positive(cfg, "num_experts_per_tok"),
                          intermediate_size=dense.intermediate_size, layers=layers, names=("w1", "w3", "w2"))
    else:
        step, only = _count(cfg, "decoder_sparse_step", 1), _layer_indices(cfg, "mlp_only_layers")
        moe_layers = sum(1 for n in range(layers) if n not in only and (n + 1) % step == 0)
        shared = _count(cfg, "shared_expert_intermediate_size", 0, minimum=0)
        experts = Experts(num_experts=_positive(cfg, "num_experts"), top_k=_positive(cfg, "num_experts_per_tok"),
                          intermediate_size=_positive(cfg, "moe_intermediate_size"), layers=moe_layers,
                          shared_intermediate_size=shared, shared_gate=shared > 0)
    return dense.model_copy(update={"model_type": kind, "experts": experts, "exact": True})


def _mla_attention(cfg: dict[str, Any], h: int, heads: int) -> tuple[list[Linear], int, int, int]:
    """Multi-head latent attention: (modules, q/k head width, q latent width, kv latent width).

    Keys and values are up-projected per head from one normalised latent of kv_lora_rank values
    (kv_a_proj_with_mqa also yields the rope part of k, shared by every head); the query is
    projected directly (q_proj, DeepSeek-V2-Lite) or through its own latent (q_a_proj, q_b_proj).
    """
    nope, rope = _positive(cfg, "qk_nope_head_dim"), _positive(cfg, "qk_rope_head_dim")
    v_dim, kv_rank = _positive(cfg, "v_head_dim"), _positive(cfg, "kv_lora_rank")
    q_rank = _count(cfg, "q_lora_rank", 0)  # null: the query is projected directly
    bias, qk = bool(cfg.get("attention_bias", False)), nope + rope
    if q_rank:
        query = [Linear(name="q_a_proj", in_features=h, out_features=q_rank, bias=bias, reads="attn_in"),
                 Linear(name="q_b_proj", in_features=q_rank, out_features=heads * qk, reads="q_latent")]
    else:
        query = [Linear(name="q_proj", in_features=h, out_features=heads * qk, reads="attn_in")]
    kv = [Linear(name="kv_a_proj_with_mqa", in_features=h, out_features=kv_rank + rope, bias=bias, reads="attn_in"),
          Linear(name="kv_b_proj", in_features=kv_rank, out_features=heads * (nope + v_dim), reads="kv_latent"),
          Linear(name="o_proj", in_features=heads * v_dim, out_features=h, bias=bias, reads="attn_out")]
    return query + kv, qk, q_rank, kv_rank


def _deepseek(cfg: dict[str, Any], kind: str) -> Architecture:
    """DeepSeek-V2/V3: MLA attention; routed plus shared experts after the first dense layers.

    Transformers builds a MoE layer for every layer from first_k_dense_replace on (moe_layer_freq
    is 1 in every published config). Activations are counted as attention over heads of the q/k
    width with k and v at every head (what the attention kernel sees once kv_b_proj has run).
    """
    h, layers = _positive(cfg, "hidden_size"), _positive(cfg, "num_hidden_layers")
    heads = _positive(cfg, "num_attention_heads")
    attention, qk, q_rank, kv_rank = _mla_attention(cfg, h, heads)
    i = _positive(cfg, "intermediate_size")
    first_dense = _count(cfg, "first_k_dense_replace", 0, minimum=0)
    moe = _positive(cfg, "moe_intermediate_size")
    experts = Experts(num_experts=_positive(cfg, "n_routed_experts", "num_experts"),
                      top_k=_positive(cfg, "num_experts_per_tok"), intermediate_size=moe,
                      layers=max(layers - first_dense, 0),
                      shared_intermediate_size=moe * _count(cfg, "n_shared_experts", 0, minimum=0))
    return Architecture(
        **_common(cfg, kind, h, layers, (heads, heads, qk)), intermediate_size=i, attention=attention,
        mlp=_gated_mlp(h, i, bool(cfg.get("mlp_bias", False))), experts=experts,
        activation=str(cfg.get("hidden_act", "silu")), layer_norm_params=2 * h + q_rank + kv_rank,
        final_norm_params=h, q_latent_dim=q_rank, kv_latent_dim=kv_rank)


READERS: dict[str, Callable[[dict[str, Any], str], Architecture]] = {
    **{kind: _llama_like for kind in _LLAMA_LIKE},
    "phi3": _phi3, "phi": _phi, "phi-msft": _phi, "gpt2": _gpt2, "gpt_neox": _gpt_neox, "falcon": _falcon,
    "mixtral": _moe, "qwen2_moe": _moe, "qwen3_moe": _moe, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek,
}


# Multimodal wrappers whose language model is one of ours and whose other towers are counted here;
# AutoModelForCausalLM builds the whole model (Gemma3ForConditionalGeneration: 4.30 B for
# gemma-3-4b, of which 3.88 B are the language model).
_TEXT_TYPE_OF_WRAPPER = {"gemma3": "gemma3_text"}
_TOWERS = ("vision_config", "audio_config")
# Keys a published config leaves to its config class's defaults: gemma-3-4b-it's text_config
# names only the width, depth and MLP size (transformers' Gemma3TextConfig fills in the rest).
_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"vocab_size": 262_208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                    "hidden_activation": "gelu_pytorch_tanh"},
}


def _vit_params(v: dict[str, Any]) -> int:
    """A SigLIP vision tower (Gemma 3's): patch and position embeddings, pre-norm encoder layers, a final norm."""
    h, i = _positive(v, "hidden_size", default=768), _positive(v, "intermediate_size", default=3072)
    layers, patch = _positive(v, "num_hidden_layers", default=12), _positive(v, "patch_size", default=16)
    image, channels = _positive(v, "image_size", default=224), _positive(v, "num_channels", default=3)
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h  # q, k, v, out; fc1, fc2; two LayerNorms
    return layers * layer + channels * patch * patch * h + h + (image // patch) ** 2 * h + 2 * h


def _with_towers(arch: Architecture, wrapper: dict[str, Any]) -> Architecture:
    """The language model plus its wrapper's other towers, which the trainer loads too.

    Gemma 3's SigLIP tower and projector are counted; any other wrapper is marked inexact, so the
    meta-device model counts the whole of it (or the estimate says it cannot).
    """
    vision = wrapper.get("vision_config") or {}
    known = (wrapper.get("model_type") == "gemma3" and isinstance(vision, dict)
             and vision.get("model_type", "siglip_vision_model") == "siglip_vision_model"
             and not vision.get("vision_use_head") and "audio_config" not in wrapper)
    if not known:
        return arch.model_copy(update={"exact": False})
    width = _positive(vision, "hidden_size", default=768)
    projector = width * arch.hidden_size + width  # the input projection and its RMSNorm
    return arch.model_copy(update={"tower_params": _vit_params(vision) + projector})


def _checkpoint_quantization(config: dict[str, Any]) -> dict[str, Any]:
    """What config.json's quantization_config says the stored weights are (nothing when absent)."""
    stored = stored_quantization(config)
    if stored is None or stored.bits not in (4, 8):
        return {}
    double = stored.method == "bitsandbytes" and bool(config["quantization_config"].get("bnb_4bit_use_double_quant"))
    return {"checkpoint_quantization": f"{stored.bits}bit", "checkpoint_double_quant": double,
            "checkpoint_quant_method": stored.method}


def from_config(config: dict[str, Any], source: str = "") -> Architecture:
    """Build an Architecture from a Hugging Face `config.json` dict.

    Raises:
        ValueError: a key the family needs is missing or not a positive integer.
    """
    cfg, wrapper = config, None
    if "text_config" in config and not any(k in config for k in ("hidden_size", "n_embd")):
        cfg, wrapper = config["text_config"], config  # a multimodal model: the language model's own config
        if not isinstance(cfg, dict):
            raise ValueError(f"config.json: 'text_config' must be a mapping of the language model's keys, got {cfg!r}")
    default = _TEXT_TYPE_OF_WRAPPER.get(str(config.get("model_type")), "llama") if wrapper else "llama"
    kind = str(cfg.get("model_type", default))
    reader = READERS.get(kind, _llama_like)
    if kind not in READERS and kind not in _LLAMA_LIKE:
        cfg = {**_guessed_names(cfg), **cfg}
    arch = reader({**_CLASS_DEFAULTS.get(kind, {}), **cfg}, kind)
    if wrapper is not None and any(wrapper.get(k) for k in _TOWERS):
        arch = _with_towers(arch, wrapper)
    context = _context(cfg)
    if arch.position_embeddings and not context["max_positions"]:
        context["max_positions"] = arch.position_embeddings  # the family's default (GPT-2's 1024)
    return arch.model_copy(update={"source": source, "custom_code": custom_classes(config),
                                   **_checkpoint_quantization(config), **context})


# What other decoders call the shapes a Llama-style reading needs (OPT's ffn_dim, GPT-J's n_inner,
# T5-style d_model/d_ff): an architecture nobody counts is still read as a guess (exact=False, then
# counted on the meta device or TG411) rather than refused as an unusable config (TG405).
_ALIASES = {"hidden_size": ("d_model", "n_embd", "dim"), "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
            "num_attention_heads": ("n_head", "num_heads", "n_heads"),
            "intermediate_size": ("ffn_dim", "n_inner", "d_ff", "ffn_hidden_size", "inner_hidden_size")}


def _guessed_names(cfg: dict[str, Any]) -> dict[str, Any]:
    found = {key: next((cfg[a] for a in names if type(cfg.get(a)) is int and cfg[a] > 0), None)
             for key, names in _ALIASES.items() if key not in cfg or cfg[key] is None}
    if found.get("intermediate_size") is None and type(cfg.get("hidden_size", found.get("hidden_size"))) is int:
        found["intermediate_size"] = 4 * (cfg.get("hidden_size") or found["hidden_size"])  # the classic MLP width
    return {k: v for k, v in found.items() if v is not None}


_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


def _context(cfg: dict[str, Any]) -> dict[str, Any]:
    """The positions the model was trained for, and whether a rotary scaling extends them."""
    found = next((cfg[k] for k in _POSITION_KEYS if type(cfg.get(k)) is int and cfg[k] > 0), 0)
    scaling = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else None
    return {"max_positions": found, "long_context": kind not in (None, "default")}


def load_architecture(model_id: str, revision: str | None = None) -> Architecture | None:
    """The Architecture of `model_id`, or None when no config.json can be found.

    Raises:
        ValueError: the config exists but lacks the shapes we need.
    """
    found = find_config(model_id, revision)
    if found is None:
        return None
    config, source = found
    return from_config(config, source=source)
