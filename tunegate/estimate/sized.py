"""A model known only by its size: a Llama-like Architecture synthesised from `model.params`.

    arch = architecture_from_size(8.03)                  # hidden 4096, 32 layers: Llama-3.1-8B's shape
    arch = architecture_from_size(70.6, hidden_size=8192)  # 80 layers: Llama-3.1-70B's

For a model whose config.json cannot be read (offline, a gated repo), the size in billions is what
the source's own typed config takes. The shape is Llama-3's, whose configs (Llama-3.2-1B/3B,
Llama-3.1-8B/70B/405B) give these ratios:

- head_dim 128 and 8 key/value heads (grouped-query attention) at every size (fewer where 8 does
  not divide the heads);
- a gated (SwiGLU) MLP 3.5 x the hidden size wide (14336 / 4096, 28672 / 8192);
- about 128 hidden units per layer (4096 / 32 = 128, 8192 / 80 = 102, 16384 / 126 = 130);
- a 128,256-token vocabulary, untied embedding and output head.

The hidden size is solved from the parameter count (rounded to a multiple of 128), then the layer
count that makes the total match it; a given hidden size or layer count is kept. The memory band is
widened (`from_size`) and the estimate says so (TG419): a real config.json always wins.
"""
from __future__ import annotations

from tunegate.estimate.architecture import Architecture, Linear
from tunegate.spec import bounds

HEAD_DIM = 128
KV_HEADS = 8
MLP_RATIO = 3.5
HIDDEN_PER_LAYER = 128
VOCAB = 128_256
# Beyond any model trained so far (the largest published dense and MoE models are a few trillion
# parameters, hidden sizes up to ~25k, under 200 layers): a larger figure is a typo, not a model. The
# spec refuses it at its key (TG103, tunegate.spec.bounds, the one home of these limits); a caller
# that passes one anyway gets the ValueError below (TG405), never a shape solved from it.
MAX_BILLIONS, MAX_HIDDEN, MAX_LAYERS = float(bounds.MAX_PARAMS_B), bounds.MAX_HIDDEN_SIZE, bounds.MAX_LAYERS


def architecture_from_size(billions: float, hidden_size: int | None = None,
                           num_layers: int | None = None, source: str = "model.params") -> Architecture:
    """A Llama-like decoder of `billions` parameters (see the module docstring for the ratios).

    Raises:
        ValueError: the size is too small for any such shape (below its embeddings alone).
    """
    over = [f"{name} {value:,g} is above {most:,g}" for name, value, most in (
        ("params", billions, MAX_BILLIONS), ("hidden_size", hidden_size, MAX_HIDDEN), ("num_layers", num_layers, MAX_LAYERS))
        if value is not None and value > most]
    if over:
        raise ValueError(f"{', '.join(over)}: beyond any model trained so far")
    total = billions * 1e9
    h = hidden_size or _hidden_for(total, num_layers)
    if total <= _embeddings(h):
        raise ValueError(f"{billions:g} B parameters is no more than the embeddings of a Llama-like model of "
                         f"hidden size {h} ({_embeddings(h) / 1e9:.2g} B)")
    heads = max(1, h // HEAD_DIM)
    head_dim = h // heads
    kv = max(d for d in range(1, KV_HEADS + 1) if heads % d == 0)  # grouped-query: kv heads divide the heads
    layers = num_layers or max(1, round((total - _embeddings(h)) / _layer_params(h, kv * head_dim, round(MLP_RATIO * h))))
    width = _mlp_width(total, h, layers, kv * head_dim) if hidden_size and num_layers else round(MLP_RATIO * h)
    attention = [Linear(name="q_proj", in_features=h, out_features=heads * head_dim, reads="attn_in"),
                 Linear(name="k_proj", in_features=h, out_features=kv * head_dim, reads="attn_in"),
                 Linear(name="v_proj", in_features=h, out_features=kv * head_dim, reads="attn_in"),
                 Linear(name="o_proj", in_features=heads * head_dim, out_features=h, reads="attn_out")]
    mlp = [Linear(name="gate_proj", in_features=h, out_features=width, reads="mlp_in"),
           Linear(name="up_proj", in_features=h, out_features=width, reads="mlp_in"),
           Linear(name="down_proj", in_features=width, out_features=h, reads="mlp_act")]
    # model_type "": no family is claimed, so no module names or attention kernels are judged by one
    return Architecture(model_type="", vocab_size=VOCAB, hidden_size=h, num_layers=layers, num_heads=heads,
                        num_kv_heads=kv, head_dim=head_dim, intermediate_size=width, attention=attention,
                        mlp=mlp, layer_norm_params=2 * h, final_norm_params=h, from_size=True, source=source)


def _embeddings(h: int) -> float:
    return 2 * VOCAB * h + h  # untied input embedding and output head, the final norm


def _layer_params(h: int, kv_dim: int, width: int) -> float:
    return 2 * h * h + 2 * h * kv_dim + 3 * h * width + 2 * h


def _hidden_for(total: float, layers: int | None) -> int:
    """The hidden size (a multiple of 128) whose Llama-like model has `total` parameters."""
    def size(h: float) -> float:
        depth = layers or h / HIDDEN_PER_LAYER
        return _embeddings(int(h)) + depth * _layer_params(int(h), KV_HEADS * HEAD_DIM, int(MLP_RATIO * h))

    low, high = float(HEAD_DIM), float(MAX_HIDDEN)
    for _ in range(60):  # bisection: size() grows with h
        mid = (low + high) / 2
        low, high = (mid, high) if size(mid) < total else (low, mid)
    return max(HEAD_DIM, round(low / HEAD_DIM) * HEAD_DIM)


def _mlp_width(total: float, h: int, layers: int, kv_dim: int) -> int:
    """The MLP width that makes a given hidden size and depth add up to `total` (3.5 h if it cannot)."""
    per_layer = (total - _embeddings(h)) / layers - 2 * h * h - 2 * h * kv_dim - 2 * h
    width = round(per_layer / (3 * h))
    return width if width > 0 else round(MLP_RATIO * h)
