"""A decoder-only model's shapes and its exact parameter counts, total and active per token.

    arch = load_architecture("meta-llama/Llama-3.1-8B")     # tunegate.estimate.families
    arch.param_count()          # 8,030,261,248, counted from the shapes (no weights, no torch)
    arch.active_param_count()   # the same for a dense model; two experts of eight for Mixtral

One decoder layer is a list of named linear modules, each saying which tensor it reads (modules
that read the same tensor share one saved copy of it in the backward pass), plus the norms and,
for a mixture of experts, the experts, the router and any shared expert. `families.py` turns each
architecture's config.json into this shape; nothing here reads a file.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

# What a linear module reads: the attention's normalised input, the attention core's output, the
# MLP's normalised input, the MLP's activated hidden state. A parallel block (phi, falcon) feeds
# attention and MLP the same tensor, so its MLP modules read "attn_in" too. Multi-head latent
# attention (DeepSeek-V2/V3) up-projects normalised low-rank latents: "q_latent", "kv_latent".
Reads = Literal["attn_in", "attn_out", "mlp_in", "mlp_act", "q_latent", "kv_latent"]
# Elementwise activations by how many tensors of the MLP's width autograd keeps for them: SiLU and
# PyTorch's GELU keep their input; transformers' "gelu_new"/"gelu_fast" are written out in Python
# (x, tanh(...), 0.5·x and 1 + tanh(...) are all kept).
ACTIVATION_TENSORS = {"silu": 1, "swish": 1, "gelu": 1, "gelu_pytorch_tanh": 1, "relu": 1,
                      "gelu_new": 4, "gelu_fast": 4, "quick_gelu": 2}


class Linear(BaseModel):
    """One linear module of a decoder layer, named as the model names it (what LoRA targets match)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    in_features: int
    out_features: int
    bias: bool = False
    reads: Reads

    @property
    def params(self) -> int:
        return self.in_features * self.out_features + (self.out_features if self.bias else 0)


class Experts(BaseModel):
    """The mixture-of-experts part of a layer: every expert is held in memory, `top_k` run per token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_experts: int
    top_k: int
    intermediate_size: int        # one expert's hidden width
    layers: int                   # decoder layers with experts (the rest have the dense MLP)
    shared_intermediate_size: int = 0  # an always-on shared expert (Qwen2-MoE, DeepSeek), 0 if none
    shared_gate: bool = False     # a 1-wide sigmoid gate on the shared expert (Qwen2-MoE)
    # one expert's gate, up and down projections as transformers 4 named its nn.Linear modules
    names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")

    def expert_params(self, hidden: int) -> int:
        """One expert: gate and up (hidden -> width) and down (width -> hidden), no biases."""
        return 3 * hidden * self.intermediate_size

    def layer_params(self, hidden: int) -> int:
        """Every expert, the router and the shared expert of one MoE layer."""
        shared = 3 * hidden * self.shared_intermediate_size + (hidden if self.shared_gate else 0)
        return self.num_experts * self.expert_params(hidden) + hidden * self.num_experts + shared

    def shared_linear(self, hidden: int) -> list[Linear]:
        """The shared expert's nn.Linear modules (quantised and LoRA-targeted like a dense MLP's)."""
        i = self.shared_intermediate_size
        if not i:
            return []
        return [Linear(name="gate_proj", in_features=hidden, out_features=i, reads="mlp_in"),
                Linear(name="up_proj", in_features=hidden, out_features=i, reads="mlp_in"),
                Linear(name="down_proj", in_features=i, out_features=hidden, reads="mlp_act")]

    def active_layer_params(self, hidden: int) -> int:
        """What one token multiplies through in one MoE layer: top_k experts, router, shared expert."""
        shared = 3 * hidden * self.shared_intermediate_size + (hidden if self.shared_gate else 0)
        return self.top_k * self.expert_params(hidden) + hidden * self.num_experts + shared


class Architecture(BaseModel):
    """The shapes that decide memory and FLOPs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_type: str = "llama"
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    attention: list[Linear]
    mlp: list[Linear]             # the dense MLP (every layer of a dense model)
    experts: Experts | None = None
    activation: str = "silu"
    gated_mlp: bool = True
    norm: Literal["rms", "layer"] = "rms"
    norms_per_layer: int = 2      # norms whose input autograd keeps (Gemma-2 has four)
    layer_norm_params: int        # weights (and biases) of one layer's norms, q/k norms included
    final_norm_params: int
    qk_norm: bool = False         # RMSNorm over each head's q and k (Qwen3, Gemma-3)
    tie_embeddings: bool = False
    position_embeddings: int = 0  # learned absolute positions (GPT-2)
    max_positions: int = 0        # the context it was trained for (max_position_embeddings), 0 if unstated
    long_context: bool = False    # a rope_scaling (YaRN, linear, dynamic...) stretches rotary positions past it
    lm_head_bias: bool = False
    logit_softcap: bool = False   # Gemma-2: tanh(logits / cap) · cap, one more tensor of logits
    q_latent_dim: int = 0         # MLA's compressed query width (DeepSeek-V3 q_lora_rank), 0 if none
    kv_latent_dim: int = 0        # MLA's compressed key/value width (kv_lora_rank), 0 if not MLA
    tower_params: int = 0         # outside the decoder: a multimodal model's vision tower and projector
    # A checkpoint stored quantised (config.json's quantization_config: bitsandbytes, GPTQ, AWQ,
    # fp8): transformers loads it so whatever the spec's model.quantization says.
    checkpoint_quantization: Literal["none", "4bit", "8bit"] = "none"
    checkpoint_double_quant: bool = False
    checkpoint_quant_method: str = ""
    exact: bool = True            # False: an architecture the config-only counter does not know
    meta_params: int | None = None  # transformers' count on the meta device, when `exact` is False
    from_size: bool = False       # synthesised from model.params alone (tunegate.estimate.sized): a shape guessed
    source: str = ""
    custom_code: list[str] = []   # the classes its config maps to the repo's own code (auto_map): TG114

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.experts is not None

    @property
    def dense_layers(self) -> int:
        return self.num_layers - (self.experts.layers if self.experts else 0)

    def linear_shapes(self) -> dict[str, tuple[int, int, bool]]:
        """Per decoder layer: module name -> (in_features, out_features, has_bias).

        The dense MLP counts only when some layer has one (every layer of Mixtral has experts).
        """
        mlp = self.mlp if self.dense_layers else []
        return {m.name: (m.in_features, m.out_features, m.bias) for m in self.attention + mlp}

    def layer_linear_params(self) -> int:
        """Weights and biases of one dense decoder layer's linear projections."""
        return sum(m.params for m in self.attention + self.mlp)

    def decoder_linear_params(self) -> int:
        """Every decoder layer's linear weights: attention, dense MLPs, experts and routers."""
        attention = self.num_layers * sum(m.params for m in self.attention)
        dense = self.dense_layers * sum(m.params for m in self.mlp)
        moe = self.experts.layers * self.experts.layer_params(self.hidden_size) if self.experts else 0
        return attention + dense + moe

    def active_decoder_linear_params(self) -> int:
        """The decoder layers' linear weights one token multiplies through."""
        attention = self.num_layers * sum(m.params for m in self.attention)
        dense = self.dense_layers * sum(m.params for m in self.mlp)
        moe = self.experts.layers * self.experts.active_layer_params(self.hidden_size) if self.experts else 0
        return attention + dense + moe

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size + self.position_embeddings * self.hidden_size

    def lm_head_params(self) -> int:
        weight = 0 if self.tie_embeddings else self.vocab_size * self.hidden_size
        return weight + (self.vocab_size if self.lm_head_bias else 0)

    def norm_params(self) -> int:
        return self.num_layers * self.layer_norm_params + self.final_norm_params

    def counted_params(self) -> int:
        """The config-only count: every expert included, tied embeddings counted once, any vision tower."""
        return (self.embedding_params() + self.decoder_linear_params() + self.norm_params()
                + self.lm_head_params() + self.tower_params)

    def param_count(self) -> int:
        """Exact number of parameters: the config-only count, or the meta-device one where it is not exact."""
        return self.meta_params or self.counted_params()

    def active_param_count(self) -> int:
        """Parameters one token's forward pass uses: all of them for a dense model."""
        active = (self.embedding_params() + self.active_decoder_linear_params() + self.norm_params()
                  + self.lm_head_params())
        return round(active * self.param_count() / self.counted_params())

    def matmul_params(self) -> int:
        """Parameters in a matrix multiply per token: active decoder weights plus the lm_head (tied or not)."""
        return self.active_decoder_linear_params() + self.vocab_size * self.hidden_size


def targeted_modules(arch: Architecture, target_modules: list[str] | str) -> list[str]:
    """The per-layer linear modules LoRA adapts; 'all-linear' is every one (PEFT skips the lm_head).

    Experts are 3-D parameters in transformers 5, not linear modules: LoRA target names never
    match them (PEFT reaches them only through `target_parameters`).
    """
    names = list(arch.linear_shapes())
    if target_modules == "all-linear":
        return names
    return [n for n in names if n in set(target_modules)]


def linear_module_names(arch: Architecture, linear_experts: bool) -> list[str]:
    """The linear modules' names a target can name: a layer's (all-linear's), a shared expert's, and
    every expert's where the experts are nn.Linear modules (transformers 4)."""
    names = targeted_modules(arch, "all-linear")
    if arch.experts is not None:
        names += [m.name for m in arch.experts.shared_linear(arch.hidden_size)]
        names += list(arch.experts.names) if linear_experts else []
    return list(dict.fromkeys(names))


# The token embedding's and the output head's names where a family does not call them
# embed_tokens and lm_head (GPT-NeoX's head is embed_out in transformers 4, lm_head in 5).
_EMBEDDING = {"gpt2": "wte", "gpt_neox": "embed_in", "falcon": "word_embeddings"}
_HEADS = {"gpt_neox": ("lm_head", "embed_out")}


def embedding_lora_params(arch: Architecture, target_modules: list[str] | str, r: int) -> int:
    """LoRA on the embeddings and the output head, when named (all-linear never takes them).

    A LoRA embedding holds r x rows (A) and width x r (B); the head is a linear hidden -> vocab.
    """
    if isinstance(target_modules, str):
        return 0
    wanted, h = set(target_modules), arch.hidden_size
    rows = {_EMBEDDING.get(arch.model_type, "embed_tokens"): arch.vocab_size}
    if arch.position_embeddings:
        rows["wpe"] = arch.position_embeddings  # GPT-2's learned positions, an embedding too
    head = r * (h + arch.vocab_size) if wanted & set(_HEADS.get(arch.model_type, ("lm_head",))) else 0
    return head + sum(r * (n + h) for name, n in rows.items() if name in wanted)


def lora_param_count(arch: Architecture, target_modules: list[str] | str, r: int) -> int:
    """Trainable LoRA parameters: r x (in + out) for every adapted module in every layer that has it,
    and for the embeddings and the output head when they are named."""
    wanted = set(targeted_modules(arch, target_modules))
    if target_modules == "all-linear" and arch.experts is not None:
        wanted |= {m.name for m in arch.experts.shared_linear(arch.hidden_size)}

    def adapted(modules: list[Linear]) -> int:
        return sum(r * (m.in_features + m.out_features) for m in modules if m.name in wanted)

    # a shared expert's gate/up/down_proj answer to the same target names as a dense MLP's
    shared = arch.experts.layers * adapted(arch.experts.shared_linear(arch.hidden_size)) if arch.experts else 0
    layers = arch.num_layers * adapted(arch.attention) + arch.dense_layers * adapted(arch.mlp) + shared
    return layers + embedding_lora_params(arch, target_modules, r)


def expert_lora_param_count(arch: Architecture, target_modules: list[str] | str, r: int) -> int:
    """LoRA on every expert, where experts are nn.Linear modules (transformers 4) a target name matches."""
    e = arch.experts
    if e is None:
        return 0
    h, i = arch.hidden_size, e.intermediate_size
    shapes = dict(zip(e.names, ((h, i), (h, i), (i, h)), strict=True))
    wanted = set(shapes) if target_modules == "all-linear" else set(shapes) & set(target_modules)
    return e.layers * e.num_experts * sum(r * (a + b) for name, (a, b) in shapes.items() if name in wanted)
