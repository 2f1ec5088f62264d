"""A decoder-only model's shapes, read from its `config.json`, and the exact parameter counts.

    arch = load_architecture("meta-llama/Llama-3.1-8B")
    arch.param_count()          # 8,030,261,248, counted from the shapes (no weights, no torch)

The config comes from, in order: a local folder (or file) holding `config.json`; the configs
shipped in `tunegate/data/model_configs/` for popular models; the Hugging Face cache; the hub,
only when it is reachable and not switched off with HF_HUB_OFFLINE. Llama-style models (Llama,
Mistral, Qwen2, ...: GQA attention, gated MLP, RMSNorm) are counted exactly.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "model_configs"
# Model types whose q/k/v projections carry a bias although the config has no flag for it.
_QKV_BIAS_TYPES = {"qwen2"}
# The hub lookup must never stall a static check: give up after this many seconds.
HUB_TIMEOUT_S = 5.0


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
    tie_embeddings: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    source: str = ""

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def linear_shapes(self) -> dict[str, tuple[int, int, bool]]:
        """Per decoder layer: module name -> (in_features, out_features, has_bias)."""
        h, i = self.hidden_size, self.intermediate_size
        return {
            "q_proj": (h, self.q_dim, self.qkv_bias), "k_proj": (h, self.kv_dim, self.qkv_bias),
            "v_proj": (h, self.kv_dim, self.qkv_bias), "o_proj": (self.q_dim, h, self.o_bias),
            "gate_proj": (h, i, self.mlp_bias), "up_proj": (h, i, self.mlp_bias),
            "down_proj": (i, h, self.mlp_bias),
        }

    def layer_linear_params(self) -> int:
        """Weights and biases of one decoder layer's linear projections."""
        return sum(a * b + (b if bias else 0) for a, b, bias in self.linear_shapes().values())

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    def lm_head_params(self) -> int:
        return 0 if self.tie_embeddings else self.vocab_size * self.hidden_size

    def norm_params(self) -> int:
        """Two RMSNorm weights per layer plus the final norm."""
        return (2 * self.num_layers + 1) * self.hidden_size

    def param_count(self) -> int:
        """Exact number of parameters, tied embeddings counted once."""
        return (self.embedding_params() + self.num_layers * self.layer_linear_params()
                + self.norm_params() + self.lm_head_params())

    def matmul_params(self) -> int:
        """Parameters that take part in a matrix multiply per token (the lm_head, tied or not)."""
        return self.num_layers * self.layer_linear_params() + self.vocab_size * self.hidden_size


def targeted_modules(arch: Architecture, target_modules: list[str] | str) -> list[str]:
    """The per-layer linear modules LoRA adapts; 'all-linear' is every one (PEFT skips the lm_head)."""
    names = list(arch.linear_shapes())
    if target_modules == "all-linear":
        return names
    return [n for n in names if n in set(target_modules)]


def lora_param_count(arch: Architecture, target_modules: list[str] | str, r: int) -> int:
    """Trainable LoRA parameters: r x (in + out) for every adapted module in every layer."""
    shapes = arch.linear_shapes()
    per_layer = sum(r * (shapes[n][0] + shapes[n][1]) for n in targeted_modules(arch, target_modules))
    return arch.num_layers * per_layer


def from_config(config: dict[str, Any], source: str = "") -> Architecture:
    """Build an Architecture from a Hugging Face `config.json` dict.

    Raises:
        ValueError: a required key is missing or not a positive integer.
    """
    cfg = config.get("text_config", config) if "hidden_size" not in config else config
    hidden = _positive(cfg, "hidden_size")
    heads = _positive(cfg, "num_attention_heads")
    model_type = str(cfg.get("model_type", "llama"))
    return Architecture(
        model_type=model_type,
        vocab_size=_positive(cfg, "vocab_size"),
        hidden_size=hidden,
        num_layers=_positive(cfg, "num_hidden_layers"),
        num_heads=heads,
        num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        intermediate_size=_positive(cfg, "intermediate_size"),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("attention_bias", False)) or model_type in _QKV_BIAS_TYPES,
        o_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        source=source,
    )


def _positive(cfg: dict[str, Any], key: str) -> int:
    value = cfg.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"config.json: '{key}' must be a positive integer, got {value!r}")
    return value


def shipped_config_path(model_id: str) -> Path:
    """Where a shipped config for `org/name` lives: `data/model_configs/org--name.json`."""
    return SHIPPED / (model_id.strip("/").replace("/", "--") + ".json")


def find_config(model_id: str, revision: str | None = None) -> tuple[dict[str, Any], str] | None:
    """The model's config dict and where it came from, or None when no source has it.

    Raises:
        ValueError: a config file exists but is not valid JSON.
    """
    local = Path(model_id).expanduser()
    if local.is_dir() and (local / "config.json").is_file():
        return _read_json(local / "config.json"), str(local / "config.json")
    if local.is_file() and local.suffix == ".json":
        return _read_json(local), str(local)
    shipped = shipped_config_path(model_id)
    if shipped.is_file():
        return _read_json(shipped), f"shipped:{shipped.name}"
    fetched = _from_hub(model_id, revision)
    return (fetched, f"hub:{model_id}") if fetched is not None else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON config ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: config.json must hold a JSON object")
    return data


def _from_hub(model_id: str, revision: str | None) -> dict[str, Any] | None:
    """config.json from the local HF cache, else one short request to the hub; None if unavailable."""
    if "/" not in model_id or model_id.startswith((".", "/", "~")):
        return None
    try:
        import huggingface_hub as hub  # lazy: only when no local or shipped config exists
        cached = hub.try_to_load_from_cache(model_id, "config.json", revision=revision)
    except Exception:  # not installed, or a malformed repo id
        cached = None
    if isinstance(cached, str):
        return _read_json(Path(cached))
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return None
    return _fetch(model_id, revision or "main")


def _fetch(model_id: str, revision: str) -> dict[str, Any] | None:
    # One plain request with a hard timeout: huggingface_hub's own client retries for ~25 s
    # when offline, which a static check must never do.
    import urllib.error
    import urllib.parse
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/{urllib.parse.quote(model_id)}/resolve/{urllib.parse.quote(revision, safe='')}/config.json"
    request = urllib.request.Request(url)
    token = os.environ.get("HF_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=HUB_TIMEOUT_S) as response:  # noqa: S310 (https endpoint)
            data = json.loads(response.read(1_000_000).decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) else None


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
