"""The full run's resource estimate: memory per GPU, tokens/s, hours and cost, from a spec.

    est = estimate_run(spec, facts)      # facts: what earlier stages measured (token audit, mini-run)
    est.summary()["memory"]["peak_gib"]

No weights and no torch: the model's config.json is enough (`tunegate.estimate.architecture`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from tunegate.errors import EstimateError
from tunegate.estimate.architecture import Architecture, load_architecture
from tunegate.estimate.memory import MemoryEstimate, estimate_memory
from tunegate.estimate.setup import TrainSetup, setup_from_spec
from tunegate.estimate.throughput import Throughput, estimate_throughput, implied_mfu
from tunegate.facts import GateFacts
from tunegate.spec import gpus
from tunegate.spec.model import Spec

# Tokens per character for English-like chat text with a BPE vocabulary (OpenAI's rule of thumb
# "1 token ~ 4 characters of English"); only used when neither an audit nor the spec gives tokens.
CHARS_PER_TOKEN = 4.0


class TokenCount(BaseModel):
    """Training tokens in one epoch and where the number came from."""

    model_config = ConfigDict(extra="forbid")

    tokens: int
    source: Literal["spec", "token audit", "characters", "max_steps"]
    records: int | None = None  # records those tokens are in, when known (the mean record length)


class Estimate(BaseModel):
    """Everything the estimate concluded about one run."""

    model_config = ConfigDict(extra="forbid")

    model_id: str
    config_source: str
    gpu: str
    gpu_count: int
    setup: TrainSetup
    memory: MemoryEstimate
    throughput: Throughput
    tokens: TokenCount
    epochs: float
    total_tokens: float
    hours: float
    cost_usd: float | None = None
    user_hours: float | None = None
    user_implied_mfu: float | None = None

    def summary(self) -> dict[str, Any]:
        """The JSON document `tunegate estimate --json` prints and the advisor reads."""
        m, t = self.memory, self.throughput
        return {
            "model": {"id": self.model_id, "config": self.config_source,
                      "total_params": m.total_params, "trainable_params": m.trainable_params},
            "hardware": {"gpu": self.gpu, "count": self.gpu_count},
            "memory": {"peak_gib": m.peak_gib, "peak_allocated_gib": m.peak_allocated_gib,
                       "capacity_gib": m.capacity_gib, "verdict": m.verdict, "biggest": m.biggest,
                       "breakdown": m.breakdown_gib},
            "throughput": {"tokens_per_s": round(t.tokens_per_s, 1), "mfu": t.mfu,
                           "utilisation": t.utilisation, "source": t.source,
                           "model_flops_per_token": t.model_flops_per_token,
                           "hardware_flops_per_token": t.hardware_flops_per_token,
                           "peak_tflops": t.peak_tflops},
            "tokens": {"per_epoch": self.tokens.tokens, "source": self.tokens.source,
                       "epochs": self.epochs, "total": self.total_tokens},
            "hours": round(self.hours, 3),
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 2),
            "user_estimate": {"hours": self.user_hours, "implied_mfu": self.user_implied_mfu},
        }


def model_reference(spec: Spec, base_dir: Path | None) -> str:
    """model.id, as a folder beside the spec when one of that name exists there."""
    if base_dir is not None and not Path(spec.model.id).is_absolute():
        beside = base_dir / spec.model.id
        if beside.exists():
            return str(beside)
    return spec.model.id


def resolve_architecture(spec: Spec, base_dir: Path | None = None) -> Architecture:
    """The model's Architecture, or an EstimateError naming why it cannot be had."""
    try:
        arch = load_architecture(model_reference(spec, base_dir), spec.model.revision)
    except ValueError as exc:
        raise EstimateError("TG405", f"model config for '{spec.model.id}' is unusable: {exc}",
                            "Point model.id at a folder whose config.json has hidden_size, "
                            "num_hidden_layers, num_attention_heads, intermediate_size and vocab_size.",
                            key="model.id") from None
    if arch is None:
        raise EstimateError("TG404", f"cannot estimate: no config.json found for '{spec.model.id}'",
                            "Use a local model folder (a config.json alone is enough), a model whose "
                            "config ships with tunegate, or a reachable Hugging Face hub.", key="model.id")
    return arch


def resolve_gpu(spec: Spec) -> gpus.GPU:
    gpu = gpus.lookup(spec.hardware.gpu)
    if gpu is None:  # the spec stage reports this as TG109; here it only stops the estimate
        raise EstimateError("TG404", f"cannot estimate: unknown GPU '{spec.hardware.gpu}'",
                            "Use a name from `tunegate gpus`.", key="hardware.gpu")
    return gpu


def dataset_tokens(spec: Spec, facts: GateFacts) -> TokenCount:
    """Tokens per epoch: the declared full-set size, else the token audit, else characters / 4."""
    if spec.estimate.dataset_tokens:
        # The user declares the FULL set's size (the files here may be a sample of it).
        return TokenCount(tokens=spec.estimate.dataset_tokens, source="spec")
    if facts.tokens is not None and facts.tokens.train_tokens > 0:
        return TokenCount(tokens=facts.tokens.train_tokens, source="token audit", records=facts.tokens.records)
    counted = facts.content.get("train")
    chars = counted.content_chars if counted is not None else content_chars(spec.data.train)
    return TokenCount(tokens=int(chars / CHARS_PER_TOKEN), source="characters",
                      records=counted.records if counted is not None else None)


def content_chars(path: Path) -> int:
    """Characters of message content in a data file, read with the dataset wing's one lenient reader.

    Only for an estimate made without the dataset stage (`tunegate estimate`): in the gate the
    dataset stage has counted them already (`facts.content`).
    """
    from tunegate.dataset.records import message_chars

    return message_chars(path)


def measured_tokens_per_s(spec: Spec, gpu: gpus.GPU, facts: GateFacts) -> float | None:
    """The mini-run's tokens/s when it ran this model on the same GPU type, else None."""
    run = facts.mini_run
    if run is None or not run.tokens_per_s or run.tokens_per_s <= 0 or not run.gpu:
        return None
    same_gpu = gpus.lookup(run.gpu) == gpu
    same_model = (run.model or spec.model.id) == spec.model.id
    return float(run.tokens_per_s) if same_gpu and same_model else None


def estimate_setup(spec: Spec, arch: Architecture, gpu: gpus.GPU, setup: TrainSetup,
                   tokens: TokenCount, measured: float | None = None) -> Estimate:
    """Memory, throughput and hours for `setup`; the advisor calls this for each variant."""
    memory = estimate_memory(arch, setup, gpu)
    throughput = estimate_throughput(arch, setup, gpu, measured)
    t = spec.training
    if t.max_steps:
        # A step trains global_batch rows: full ones when packing, else one record each (at most seq_len).
        per_row = float(setup.seq_len)
        if not setup.packing and tokens.records:
            per_row = min(per_row, tokens.tokens / tokens.records)
        total = float(t.max_steps * setup.global_batch * per_row)
        epochs = total / max(tokens.tokens, 1)
    else:
        epochs = float(t.epochs or 1.0)
        total = tokens.tokens * epochs
    hours = total / (throughput.tokens_per_s * setup.gpu_count) / 3600.0
    price = spec.hardware.hourly_usd
    user = spec.estimate.wall_clock_hours
    implied = (implied_mfu(total, user, setup.gpu_count, throughput.model_flops_per_token,
                           throughput.peak_tflops) if user else None)
    return Estimate(model_id=spec.model.id, config_source=arch.source, gpu=gpu.name,
                    gpu_count=setup.gpu_count, setup=setup, memory=memory, throughput=throughput,
                    tokens=tokens, epochs=epochs, total_tokens=total, hours=hours,
                    cost_usd=hours * setup.gpu_count * price if price else None,
                    user_hours=user, user_implied_mfu=None if implied is None else round(implied, 4))


def estimate_run(spec: Spec, facts: GateFacts | None = None,
                 base_dir: Path | None = None) -> Estimate:
    """The estimate for the run a spec describes. Raises EstimateError when it cannot be made.

    Args:
        spec: the validated spec.
        facts: what earlier stages measured ("tokens": the token audit, "mini_run": tokens/s).
        base_dir: the spec's folder, against which a relative local model folder resolves.
    """
    facts = facts or GateFacts()
    arch, gpu = resolve_architecture(spec, base_dir), resolve_gpu(spec)
    tokens = dataset_tokens(spec, facts)
    return estimate_setup(spec, arch, gpu, setup_from_spec(spec, saved_params(arch, spec)), tokens,
                          measured_tokens_per_s(spec, gpu, facts))


def saved_params(arch: Architecture, spec: Spec) -> int:
    """Parameters of lora.modules_to_save: the embeddings and the output head, the modules configs save."""
    sizes = {"embed_tokens": arch.embedding_params(), "lm_head": arch.lm_head_params() or arch.embedding_params()}
    return sum(sizes.get(name, 0) for name in spec.lora.modules_to_save)
