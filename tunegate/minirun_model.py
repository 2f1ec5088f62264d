"""The mini-run's model: device and precision, loading, and the LoRA adapter with its checks.

A real model id, a local folder and the built-in `tunegate/tiny-llama` all load through the same
`AutoModelForCausalLM` / `AutoTokenizer` calls the full run uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tunegate.report import FindingCollector
from tunegate.spec import LoraSpec, Spec

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class RunPlace:
    """Where and how the mini-run computes."""

    device: str  # cuda | mps | cpu
    precision: str  # bf16 | fp16 | fp32, after fitting the spec's to the device
    attention: str

    @property
    def dtype(self) -> Any:
        import torch

        return getattr(torch, DTYPES[self.precision])


def available_devices() -> list[str]:
    import torch

    found = ["cuda"] if torch.cuda.is_available() else []
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def choose_place(spec: Spec, out: FindingCollector) -> RunPlace | None:
    """Pick the device (cuda, then mps, then cpu, unless the spec names one) and fit precision and
    attention to it, saying so in a finding whenever the spec's choice cannot be kept."""
    wanted = spec.gate.mini_run.device
    devices = available_devices()
    if wanted != "auto" and wanted not in devices:
        out.add("TG528", "error", f"gate.mini_run.device is {wanted!r} but this machine has only "
                f"{', '.join(devices)}", "Set gate.mini_run.device: auto, or run on a machine with that device.",
                key="gate.mini_run.device")
        return None
    device = devices[0] if wanted == "auto" else wanted
    precision = _fit_precision(spec.training.precision, device, out)
    attention = spec.training.attention
    if attention == "flash_attention_2" and not _flash_attention_ready(device):
        out.add("TG514", "warning", f"attention flash_attention_2 cannot run on {device} here (it needs CUDA "
                "and the flash-attn package); the mini-run uses sdpa", "Install flash-attn on the GPU "
                "machine; sdpa gives the same results, so the mini-run's checks still hold.",
                key="training.attention")
        attention = "sdpa"
    if device == "cpu":
        out.add("TG515", "info", f"the mini-run runs on the CPU in {precision}"
                f"{' (autocast)' if precision != 'fp32' else ''}: its checks hold, but its speed and memory "
                "are not a GPU's", "Run it on a GPU machine (gate.mini_run.device: cuda) to measure "
                "throughput and peak memory for the estimate.", key="gate.mini_run.device")
    return RunPlace(device, precision, attention)


def _fit_precision(precision: str, device: str, out: FindingCollector) -> str:
    import torch

    fitted = precision
    if device == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        fitted = "fp16"
    elif device == "mps" and precision == "bf16" and not _mps_bf16():
        fitted = "fp16"
    if fitted != precision:
        out.add("TG513", "warning", f"training.precision {precision} is not supported on this {device}; "
                f"the mini-run uses {fitted}", "Use a GPU with bf16 (Ampere or newer) for the full run, "
                "or set training.precision to what it supports.", key="training.precision")
    return fitted


def _mps_bf16() -> bool:
    import torch

    try:  # bf16 on MPS needs macOS 14+; asking for it is the reliable test
        (torch.ones(2, 2, dtype=torch.bfloat16, device="mps") @ torch.ones(2, 2, dtype=torch.bfloat16, device="mps"))
        return True
    except (RuntimeError, TypeError):
        return False


def _flash_attention_ready(device: str) -> bool:
    import importlib.util

    return device == "cuda" and importlib.util.find_spec("flash_attn") is not None


def load_model(path: str, spec: Spec, place: RunPlace) -> Any:
    """Load the base model in the run's precision onto its device (OSError/ValueError when it cannot)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        path, revision=spec.model.revision, trust_remote_code=spec.model.trust_remote_code,
        dtype=place.dtype, attn_implementation=place.attention)
    model.config.use_cache = False  # the KV cache is for generation; in training it only costs memory
    return model.to(place.device)


def load_tokenizer(path: str, spec: Spec) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, revision=spec.model.revision,
                                         trust_remote_code=spec.model.trust_remote_code)


def adaptable_module_names(model: Any) -> list[str]:
    """Distinct leaf names of the modules LoRA can wrap (linear, embedding, conv), for hints."""
    from torch import nn

    kinds = (nn.Linear, nn.Embedding, nn.Conv1d, nn.Conv2d)
    names = {name.rsplit(".", 1)[-1] for name, module in model.named_modules()
             if name and (isinstance(module, kinds) or type(module).__name__ == "Conv1D")}
    return sorted(names)


def unmatched_targets(model: Any, lora: LoraSpec) -> list[str]:
    """Target names that match no adaptable module (PEFT's rule: the full name or its last parts)."""
    if lora.target_modules == "all-linear":
        return []
    real = set(adaptable_module_names(model))
    full_names = [name for name, _ in model.named_modules()]
    return [t for t in lora.target_modules
            if t not in real and not any(n == t or n.endswith("." + t) for n in full_names)]


def apply_lora(model: Any, spec: Spec, out: FindingCollector) -> Any | None:
    """Wrap the model with the spec's LoRA adapter, checking targets, trainable count and frozen base."""
    from peft import LoraConfig, get_peft_model

    missing = unmatched_targets(model, spec.lora)
    if missing:
        out.add("TG506", "error", f"lora.target_modules {missing} match no module of this model; its linear "
                f"modules are: {', '.join(adaptable_module_names(model))}",
                "Use names from that list (e.g. q_proj, v_proj) or 'all-linear'.", key="lora.target_modules")
        return None
    if spec.training.gradient_checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
        enable({"use_reentrant": False})
    config = LoraConfig(r=spec.lora.r, lora_alpha=spec.lora.alpha, lora_dropout=spec.lora.dropout,
                        target_modules=spec.lora.target_modules, task_type="CAUSAL_LM")
    try:
        peft_model = get_peft_model(model, config)
    except ValueError as exc:  # PEFT's NoMatchingPeftModuleError and unsupported module types
        out.add("TG506", "error", f"PEFT cannot put LoRA on lora.target_modules {spec.lora.target_modules}: "
                f"{exc}", f"Use names from: {', '.join(adaptable_module_names(model))}.", key="lora.target_modules")
        return None
    _check_trainable(peft_model, out)
    return peft_model


def _check_trainable(model: Any, out: FindingCollector) -> None:
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        out.add("TG507", "error", "the LoRA model has 0 trainable parameters",
                "Check lora.target_modules and lora.r; a run with nothing to train changes nothing.",
                key="lora.target_modules")
    unfrozen = [n for n, _ in trainable if "lora_" not in n]
    if unfrozen:
        out.add("TG507", "error", f"{len(unfrozen)} base-model parameters are trainable (e.g. {unfrozen[0]}); "
                "LoRA must keep the base frozen", "Do not unfreeze base weights; list extra trained "
                "modules in PEFT's modules_to_save instead.", key="lora.target_modules")


def vocab_fits(model: Any, batches: list[dict[str, Any] | None], out: FindingCollector) -> bool:
    """Every token id the data uses has a row in the model's embedding (else: an index error mid-run)."""
    rows = model.get_input_embeddings().num_embeddings
    top = max(int(b["input_ids"].max()) for b in batches if b is not None)
    if top < rows:
        return True
    out.add("TG534", "error", f"the tokenizer produces token id {top} but the model's embedding has only {rows} "
            "rows: tokenizer and model do not match", "Use the tokenizer saved with this model; after adding "
            "tokens, call model.resize_token_embeddings(len(tokenizer)) and save both.", key="model.id")
    return False


def lora_parameters(model: Any) -> dict[str, Any]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}
