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
from tunegate.estimate.architecture import Architecture, linear_module_names
from tunegate.estimate.characters import CharacterCount, CharacterSample
from tunegate.estimate.config_files import find_config
from tunegate.estimate.families import from_config
from tunegate.estimate.measured import MemoryCheck, calibrated, measured_tokens_per_s, memory_check
from tunegate.estimate.memory import MemoryEstimate, estimate_memory
from tunegate.estimate.module_names import unmatched_targets
from tunegate.estimate.setup import TrainSetup, setup_from_spec
from tunegate.estimate.throughput import Throughput, compile_warmup_hours, estimate_throughput, implied_mfu
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
    source: Literal["spec", "token audit", "characters", "max_steps", "none"]  # none: no data here, no count
    records: int | None = None  # records those tokens are in, when known (the mean record length)
    sample: CharacterSample | None = None  # characters estimated from a sample of a large file

    def sample_statement(self) -> str:
        """'; estimated from a sample of N of about M records (...), ±X %', or '' for an exact count."""
        return "" if self.sample is None else f"; {self.sample.statement()}"


class Estimate(BaseModel):
    """Everything the estimate concluded about one run."""

    model_config = ConfigDict(extra="forbid")

    model_id: str
    model_type: str = ""
    checkpoint_quantization: str = "none"  # a checkpoint stored quantised (config.json's quantization_config)
    checkpoint_quant_method: str = ""
    max_positions: int = 0  # the context the model was trained for (0: its config does not say)
    absolute_positions: bool = False  # learned position embeddings: no position past max_positions exists
    long_context: bool = False  # a rope_scaling stretches its rotary positions
    config_source: str
    custom_code: list[str] = []  # classes the model's config maps to the repo's own code (auto_map)
    count: Literal["config", "meta-device", "llama-style guess", "model.params"]
    active_params: int
    gpu: str
    gpu_count: int
    setup: TrainSetup
    memory: MemoryEstimate
    throughput: Throughput
    tokens: TokenCount
    epochs: float
    total_tokens: float
    hours: float  # training time plus compile_warmup_hours
    compile_warmup_hours: float = 0.0  # torch.compile's compilation before the first fast step
    cost_usd: float | None = None
    user_hours: float | None = None
    user_implied_mfu: float | None = None
    memory_check: MemoryCheck | None = None
    # lora.target_modules no module of the model is named (only where its module names are known)
    unmatched_targets: list[str] = []
    linear_modules: list[str] = []  # the model's linear module names a target can name
    measured: dict[str, Any] | None = None  # the mini-run's measurements, with their device

    def summary(self) -> dict[str, Any]:
        """The JSON document `tunegate estimate --json` prints and the advisor reads."""
        m, t = self.memory, self.throughput
        return {
            "model": {"id": self.model_id, "config": self.config_source, "count": self.count,
                      "total_params": m.total_params, "active_params": self.active_params,
                      "trainable_params": m.trainable_params, "method": self.setup.method},
            "hardware": {"gpu": self.gpu, "count": self.gpu_count},
            "memory": {"peak_gib": m.peak_gib, "low_gib": m.low_gib, "high_gib": m.high_gib,
                       "peak_allocated_gib": m.peak_allocated_gib, "capacity_gib": m.capacity_gib,
                       "verdict": m.verdict, "biggest": m.biggest, "breakdown": m.breakdown_gib,
                       "check": None if self.memory_check is None else self.memory_check.model_dump()},
            "throughput": {"tokens_per_s": round(t.tokens_per_s, 1), "mfu": t.mfu,
                           "utilisation": t.utilisation, "source": t.source,
                           "model_flops_per_token": t.model_flops_per_token,
                           "hardware_flops_per_token": t.hardware_flops_per_token,
                           "peak_tflops": t.peak_tflops},
            "tokens": {"per_epoch": self.tokens.tokens, "source": self.tokens.source,
                       "epochs": self.epochs, "total": self.total_tokens,
                       **({"sample": self.tokens.sample.model_dump()} if self.tokens.sample else {})},
            "hours": None if self.tokens.source == "none" else round(self.hours, 3),
            "compile_warmup_hours": round(self.compile_warmup_hours, 3),
            "cost_usd": None if self.cost_usd is None or self.tokens.source == "none" else round(self.cost_usd, 2),
            "user_estimate": {"hours": self.user_hours, "implied_mfu": self.user_implied_mfu},
            "measured": self.measured,
        }


def resolve_architecture(spec: Spec, base_dir: Path | None = None, meta: bool = False) -> Architecture:
    """The model's Architecture, or an EstimateError naming why it cannot be had.

    With `meta`, transformers builds the model on the meta device in this process and its count is
    the one used (`tunegate estimate --meta`). Without it, only an architecture the config-only
    counter does not know is counted that way, in a child process, so torch never enters the gate.
    """
    try:
        found = find_config(spec.model.id, spec.model.revision, base_dir)
        arch = from_config(*found) if found is not None else None
    except ValueError as exc:
        raise EstimateError("TG405", f"model config for '{spec.model.id}' is unusable: {exc}",
                            "Point model.id at a folder holding the model's own config.json (hidden_size "
                            "or n_embd, the layer and head counts, vocab_size).", key="model.id") from None
    if arch is None and spec.model.params is not None:
        return _from_size(spec)
    if arch is None:
        raise EstimateError("TG404", f"cannot estimate: no config.json found for '{spec.model.id}' on this "
                            "machine, so memory and time were never checked and the run cannot be approved",
                            "Put the model's config.json where this machine finds it: `hf download ID config.json` "
                            "fills the Hugging Face cache (HF_HUB_CACHE) without changing the config, or point "
                            "model.id at a folder holding it; the config alone is enough, no weights needed. "
                            "Without it, model.params (the size in billions) gives an estimate with a wider band.",
                            key="model.id", not_here=True)
    if meta or not arch.exact:
        counted = _meta_count(found[0], in_process=meta)
        if counted is not None:
            arch = arch.model_copy(update={"meta_params": counted})
    return arch


def _from_size(spec: Spec) -> Architecture:
    """A Llama-like shape of model.params billions (tunegate.estimate.sized), for a config no one can read."""
    from tunegate.estimate.sized import architecture_from_size

    m = spec.model
    try:
        return architecture_from_size(m.params, m.hidden_size, m.num_layers)
    except ValueError as exc:
        raise EstimateError("TG405", f"model.params cannot be read as a model: {exc}",
                            "Give the size in billions of parameters (8 for an 8B model), and hidden_size and "
                            "num_layers only as the model's config has them.", key="model.params") from None


def _meta_count(config: dict, in_process: bool) -> int | None:
    from tunegate.estimate import meta_count

    if in_process:
        try:
            return meta_count.meta_count(config).total_params
        except (ImportError, ValueError):
            return None
    found = meta_count.count_in_subprocess(config)
    return found.total_params if found is not None else None


def resolve_gpu(spec: Spec) -> gpus.GPU:
    gpu = gpus.for_hardware(spec.hardware)
    if gpu is None:  # the spec stage reports this as TG109/TG117; here it only stops the estimate
        choices = gpus.ambiguous(spec.hardware.gpu)
        why = f"ambiguous GPU '{spec.hardware.gpu}'" if choices else f"unknown GPU '{spec.hardware.gpu}'"
        raise EstimateError("TG404", f"cannot estimate: {why}",
                            f"Write one of {', '.join(choices)}." if choices else
                            "Use a name from `tunegate gpus`, or give the GPU's figures in hardware.custom.",
                            key="hardware.gpu")
    return gpu


def dataset_tokens(spec: Spec, facts: GateFacts, data_available: bool = True) -> TokenCount:
    """Tokens per epoch: the declared full-set size, else the token audit, else characters / 4; none
    (0, source "none") when the training data cannot be had here and nothing else gives a count."""
    if spec.estimate.dataset_tokens:
        # The user declares the FULL set's size (the files here may be a sample of it).
        return TokenCount(tokens=spec.estimate.dataset_tokens, source="spec")
    if facts.tokens is not None and facts.tokens.train_tokens > 0:
        return TokenCount(tokens=facts.tokens.train_tokens, source="token audit", records=facts.tokens.records)
    if not data_available and "train" not in facts.content:
        return TokenCount(tokens=0, source="none")
    counted = facts.content.get("train")
    if counted is not None:  # the dataset stage of this command read every record: its count, not a second read
        return TokenCount(tokens=int(counted.content_chars / CHARS_PER_TOKEN), source="characters",
                          records=counted.records)
    found = content_chars(spec.data.files("train"))
    return TokenCount(tokens=int(found.chars / CHARS_PER_TOKEN), source="characters", sample=found.sample)


def content_chars(path: Path | list[Path]) -> CharacterCount:
    """Characters of message content in a data file (or a split's files): exact for a small file, else
    estimated from a bounded sample (`tunegate.estimate.characters`).

    Only for an estimate made without the dataset stage (`tunegate estimate`, `tunegate advise`): in
    the gate the dataset stage has counted them already (`facts.content`).
    """
    from tunegate.estimate.characters import counted_characters

    return counted_characters(path)


def _count_of(arch: Architecture) -> str:
    if arch.from_size:
        return "model.params"
    if arch.exact:
        return "meta-device" if arch.meta_params else "config"
    return "meta-device" if arch.meta_params else "llama-style guess"


def _total_tokens(spec: Spec, setup: TrainSetup, tokens: TokenCount) -> tuple[float, float]:
    """(training tokens of the whole run, epochs)."""
    t = spec.training
    if t.max_steps:
        # A step trains global_batch rows: full ones when packing, else one record each (at most seq_len).
        per_row = float(setup.seq_len)
        if not setup.packing and tokens.records:
            per_row = min(per_row, tokens.tokens / tokens.records)
        # A step never trains more than the whole set: the Trainer steps at each epoch's end, so a
        # global batch above the records makes every step one pass over them.
        total = float(t.max_steps * min(setup.global_batch * per_row, tokens.tokens))
        return total, total / max(tokens.tokens, 1)
    epochs = float(t.epochs or 1.0)
    return tokens.tokens * epochs, epochs


def estimate_setup(spec: Spec, arch: Architecture, gpu: gpus.GPU, setup: TrainSetup,
                   tokens: TokenCount, facts: GateFacts | None = None) -> Estimate:
    """Memory, throughput and hours for `setup`; the advisor calls this for each variant.

    A mini-run of the same model on the same GPU type replaces the speed prior with its measured
    tokens/s and scales the memory estimate by its measured / predicted peak.
    """
    facts = facts or GateFacts()
    check = memory_check(spec, arch, gpu, setup, facts)
    memory = calibrated(estimate_memory(arch, setup, gpu), check)
    throughput = estimate_throughput(arch, setup, gpu, measured_tokens_per_s(spec, gpu, facts))
    total, epochs = _total_tokens(spec, setup, tokens)
    warmup = compile_warmup_hours(setup)
    hours = total / (throughput.tokens_per_s * setup.gpu_count) / 3600.0 + warmup
    price = spec.hardware.hourly_usd
    user = spec.estimate.wall_clock_hours
    implied = (implied_mfu(total, user, setup.gpu_count, throughput.model_flops_per_token,
                           throughput.peak_tflops) if user else None)
    run = facts.mini_run
    # a repo's own code (trust_remote_code) may name its modules otherwise; a full fine-tune has no targets
    decided = setup.method != "full" and not spec.model.trust_remote_code
    return Estimate(model_id=spec.model.id, model_type=arch.model_type, config_source=arch.source,
                    checkpoint_quantization=arch.checkpoint_quantization,
                    checkpoint_quant_method=arch.checkpoint_quant_method,
                    max_positions=arch.max_positions, absolute_positions=arch.position_embeddings > 0,
                    long_context=arch.long_context, custom_code=arch.custom_code,
                    count=_count_of(arch), active_params=arch.active_param_count(), gpu=gpu.name,
                    gpu_count=setup.gpu_count, setup=setup, memory=memory, throughput=throughput, tokens=tokens,
                    epochs=epochs,
                    total_tokens=total, hours=hours, compile_warmup_hours=warmup,
                    cost_usd=hours * setup.gpu_count * price if price else None,
                    user_hours=user, user_implied_mfu=None if implied is None else round(implied, 4),
                    memory_check=check, measured=None if run is None else run.as_measured(),
                    unmatched_targets=unmatched_targets(arch, setup.lora_targets) if decided else [],
                    linear_modules=linear_module_names(arch, setup.linear_experts))


def estimate_run(spec: Spec, facts: GateFacts | None = None, base_dir: Path | None = None,
                 meta: bool = False, data_available: bool = True) -> Estimate:
    """The estimate for the run a spec describes. Raises EstimateError when it cannot be made.

    Args:
        spec: the validated spec.
        facts: what earlier stages measured ("tokens": the token audit, "mini_run": its measurements).
        base_dir: the spec's folder, against which a relative local model folder resolves.
        meta: count the parameters on transformers' meta-device model (imports torch).
        data_available: False when the training data cannot be had here (an imported config's Hub
            dataset): memory and tokens/s are estimated, the hours only from estimate.dataset_tokens.
    """
    facts = facts or GateFacts()
    arch, gpu = resolve_architecture(spec, base_dir, meta=meta), resolve_gpu(spec)
    tokens = dataset_tokens(spec, facts, data_available)
    return estimate_setup(spec, arch, gpu, setup_from_spec(spec, saved_params(arch, spec), arch), tokens, facts)


def saved_params(arch: Architecture, spec: Spec) -> int:
    """Parameters of lora.modules_to_save: the embeddings and the output head, the modules configs save."""
    sizes = {"embed_tokens": arch.embedding_params(), "lm_head": arch.lm_head_params() or arch.embedding_params()}
    return sum(sizes.get(name, 0) for name in spec.lora.modules_to_save)
