"""The model both trainers use: loading, and the LoRA adapter with its checks.

A real model id, a local folder and the built-in `tunegate/tiny-llama` all load through the same
`AutoModelForCausalLM` / `AutoTokenizer` calls the full run uses.
"""
from __future__ import annotations

from typing import Any

from tunegate.report import FindingCollector
from tunegate.spec.model import LoraSpec, Spec
from tunegate.training.device import RunPlace


def load_model(path: str, spec: Spec, place: RunPlace) -> Any:
    """Load the base model in the run's precision onto its device (OSError/ValueError when it cannot)."""
    from transformers import AutoModelForCausalLM

    from tunegate.training.hub_kernels import load_options

    model = AutoModelForCausalLM.from_pretrained(
        path, revision=spec.model.revision, trust_remote_code=spec.model.trust_remote_code,
        dtype=place.dtype, attn_implementation=place.attention, **load_options(spec), **_quantized(spec, place))
    # The KV cache is for generation; in training it only costs memory, and with it on, transformers
    # does not build the per-record attention mask packed rows need (tunegate.training.packing).
    model.config.use_cache = False
    if spec.model.quantization != "none" and place.device == "cuda":
        from peft import prepare_model_for_kbit_training

        return prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    return model.to(place.device)


def load_key(path: str, spec: Spec, place: RunPlace) -> tuple[Any, ...]:
    """What decides the model `load_model` returns: two loads with equal keys give the same model.
    A bare "cuda" is the process's first GPU, as `.to("cuda")` places it."""
    device = "cuda:0" if place.device == "cuda" else place.device
    return path, spec.model.model_dump_json(), place.precision, place.attention, device


def _quantized(spec: Spec, place: RunPlace) -> dict[str, Any]:
    """bitsandbytes loading for a quantized base, on CUDA only (bitsandbytes has no CPU kernels):
    elsewhere, as in a mini-run on a laptop, the base loads in the run's precision."""
    if spec.model.quantization == "none" or place.device != "cuda":
        return {}
    import os

    from transformers import BitsAndBytesConfig

    where = {"": int(os.environ.get("LOCAL_RANK", "0"))}  # each process loads its copy on its own GPU
    if spec.model.quantization == "8bit":
        return {"quantization_config": BitsAndBytesConfig(load_in_8bit=True), "device_map": where}
    return {"quantization_config": BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=place.dtype), "device_map": where}


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
                        target_modules=spec.lora.target_modules, task_type="CAUSAL_LM",
                        modules_to_save=spec.lora.modules_to_save or None)
    try:
        peft_model = get_peft_model(model, config)
    except ValueError as exc:  # PEFT's NoMatchingPeftModuleError and unsupported module types
        out.add("TG506", "error", f"PEFT cannot put LoRA on lora.target_modules {spec.lora.target_modules}: "
                f"{exc}", f"Use names from: {', '.join(adaptable_module_names(model))}.", key="lora.target_modules")
        return None
    _trainable_in_fp32(peft_model)
    _check_trainable(peft_model, out)
    return peft_model


def _trainable_in_fp32(model: Any) -> None:
    """fp16 training keeps what it trains in fp32: PEFT does so for the LoRA matrices, not for the
    modules_to_save copies, which stay in the base's fp16, and the loss scaler then stops the first
    step ("Attempting to unscale FP16 gradients", issue 31)."""
    import torch

    for param in model.parameters():
        if param.requires_grad and param.dtype == torch.float16:
            param.data = param.data.float()


def _check_trainable(model: Any, out: FindingCollector) -> None:
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        out.add("TG507", "error", "the LoRA model has 0 trainable parameters",
                "Check lora.target_modules and lora.r; a run with nothing to train changes nothing.",
                key="lora.target_modules")
    # modules_to_save are trained in full on purpose, as PEFT copies named `modules_to_save`
    unfrozen = [n for n, _ in trainable if "lora_" not in n and "modules_to_save" not in n]
    if unfrozen:
        out.add("TG507", "error", f"{len(unfrozen)} base-model parameters are trainable (e.g. {unfrozen[0]}); "
                "LoRA must keep the base frozen", "Do not unfreeze base weights; list extra trained "
                "modules in PEFT's modules_to_save instead.", key="lora.target_modules")


def vocab_fits(model: Any, batches: list[dict[str, Any] | None], out: FindingCollector, tokenizer: Any = None) -> bool:
    """Every token id the data uses has a row in the model's embedding (else: an index error mid-run)."""
    rows = model.get_input_embeddings().num_embeddings
    top = max(int(b["input_ids"].max()) for b in batches if b is not None)
    if top < rows:
        return True
    if tokenizer is not None and top == tokenizer.pad_token_id:
        # A tokenizer_config.json naming a pad token its vocabulary lacks: transformers adds it on load.
        out.add("TG534", "error", f"the tokenizer produces token id {top} ({tokenizer.pad_token!r}, the tokenizer's "
                f"pad token) but the model's embedding has only {rows} rows: the pad token is not in the vocabulary "
                "the model was trained with", "Set model.pad_token (axolotl: special_tokens.pad_token) to a token "
                "the model has (its unk or a reserved special token), or call model.resize_token_embeddings"
                "(len(tokenizer)) and save model and tokenizer together.", key="model.pad_token")
        return False
    name = f" ({tokenizer.convert_ids_to_tokens(top)!r})" if tokenizer is not None else ""
    out.add("TG534", "error", f"the tokenizer produces token id {top}{name} but the model's embedding has only {rows} "
            "rows: tokenizer and model do not match", "Use the tokenizer saved with this model; after adding "
            "tokens, call model.resize_token_embeddings(len(tokenizer)) and save both.", key="model.id")
    return False


def position_limit(model: Any) -> tuple[int | None, bool]:
    """(positions the model was built for, whether they are a learned table), or (None, False) when its
    config names none (ALiBi models such as BLOOM have no limit). A learned table (GPT-2's wpe, OPT's
    embed_positions) has no row past its size: a longer record is an index error on the device; rotary
    positions go on but past what the model was trained on."""
    from torch import nn

    config = model.config
    limit = next((v for k in ("max_position_embeddings", "n_positions")
                  if isinstance(v := getattr(config, k, None), int) and v > 0), None)
    learned = any(isinstance(m, nn.Embedding) and ("pos" in name.rsplit(".", 1)[-1] or name.endswith("wpe"))
                  for name, m in model.named_modules())
    return limit, learned


def lora_parameters(model: Any) -> dict[str, Any]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}
