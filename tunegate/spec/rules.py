"""Rules on a structurally valid spec that need several fields or the GPU catalog.

These confirm the run is possible and sane, not that it is optimal: an error is a run that cannot
work (bf16 on a V100), a warning a legal value that usually signals a mistake.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path

from tunegate.pathguard import same_file
from tunegate.report import Finding, Severity
from tunegate.spec import checkpoint, gpus, runner_support, trainer_support
from tunegate.spec.model import Spec
from tunegate.spec.pasted_keys import key_like_values
from tunegate.spec.remote_code import UNPINNED_REMOTE_CODE, custom_classes, remote_code_finding
from tunegate.spec.yaml_loader import Located

# A LoRA learning rate above this usually diverges; common recipes use 1e-4 .. 3e-4.
HIGH_LR = 1e-2
# No LoRA run survives this rate. AdamW moves every weight by about the learning rate each step
# (its update is m / sqrt(v), of size ~1, times lr), so at lr >= 1 each LoRA weight moves by >= 1
# per step: 60 times the scale A starts at (1/sqrt(4096)) and 50 times a trained weight (~0.02).
# On the tiny model lr 1 makes the update 2,000 times the weight in 4 steps (TG535 in docs/checks.md).
MAX_LR = 1.0
# Below this, LoRA weights barely move in a short run.
LOW_LR = 1e-6
# alpha / r, for recipes that scale alpha with the rank: 1 or 2 (alpha = r or 2r; QLoRA's paper
# 16/64 = 0.25); far outside, updates are tiny or huge.
ALPHA_RATIO = (0.25, 4.0)
# Recipes that fix alpha whatever the rank: TRL's "LoRA Without Regret" (after Schulman et al., 2025)
# uses alpha 16 at r 256 for SFT and alpha 32 at r 1-32 for RL; the 1/r scaling then keeps the best
# learning rate about the same at every rank. TG121 does not apply to these alphas.
FIXED_ALPHAS = (16, 32)
# What a pasted API key looks like: long, no spaces, with a provider prefix or mixed entropy.
_KEY_LIKE = re.compile(r"^(sk-|sk_|pk-|key-|gsk_|xai-)|^[A-Za-z0-9_\-]{32,}$")
# Codes other modules test for: an imported config's sharding is refused by TG160 itself, and a
# sweep candidate's strings are the base spec's, already scanned.
SHARDING_ON_ONE_GPU, KEY_IN_A_VALUE = "TG115", "TG124"


def check_rules(spec: Spec, located: Located, file: str, base: Path | None = None) -> list[Finding]:
    """The rules' findings; `base` is the spec's folder (a relative model.id may name a folder there)."""
    return list(_rules(spec, located, file, base))


def _finding(code: str, severity: Severity, key: str, message: str, hint: str,
             located: Located, file: str) -> Finding:
    line, col = located.place(key) or (None, None)
    return Finding(code=code, severity=severity, stage="spec", message=message, hint=hint,
                   file=file, line=line, column=col, key=key)


def _rules(spec: Spec, loc: Located, file: str, base: Path | None) -> Iterator[Finding]:
    t, lora, hw = spec.training, spec.lora, spec.hardware
    shared = _shared_file(spec)
    if shared is not None:
        whose = "the same file as data.train" if len(spec.data.files("train")) == 1 else "also a file of data.train"
        yield _finding("TG108", "error", "data.validation", f"data.validation is {whose} ({shared.name})",
                       "Hold out a separate validation file; scores on training data say nothing "
                       "about generalisation.", loc, file)
    yield from _gpu_name_rules(spec, loc, file)
    gpu = gpus.for_hardware(hw)
    if gpu is not None:
        yield from _gpu_rules(spec, gpu, loc, file)
    if t.epochs is not None and t.max_steps is not None and "training.epochs" in loc.places:
        yield _finding("TG112", "warning", "training.max_steps",
                       f"both training.epochs ({t.epochs}) and training.max_steps ({t.max_steps}) are set; "
                       "max_steps wins", "Remove one of them.", loc, file)
    yield from _remote_code(spec, loc, file, base)
    if spec.model.hub_kernels:
        yield _finding("TG126", "warning", "model.hub_kernels",
                       "model.hub_kernels is true: transformers will download kernels from the Hugging Face Hub "
                       "(kernels-community/rotary, flash-attn and others, chosen by model and GPU) at load and at "
                       "the first train() and eval(), and run them in the training process: unpinned remote code, "
                       "and on an offline GPU box a crash at the first step",
                       "Remove model.hub_kernels unless you reviewed those repos and the GPU box can reach the "
                       "Hub (or has them cached); the PyTorch kernels train the same model.", loc, file)
    if t.sharding != "none" and hw.count == 1:
        yield _finding(SHARDING_ON_ONE_GPU, "warning", "training.sharding",
                       f"training.sharding is '{t.sharding}' on a single GPU: nothing to shard across",
                       "Set hardware.count above 1 or sharding to 'none'.", loc, file)
    yield from trainer_support.findings(spec, loc.place, file, base)  # TG160; TG161-TG162: the run machine's needs
    yield from runner_support.findings(spec, loc.place, file)  # TG167, TG168: where candidates run
    yield from _learning_rate(spec, loc, file)
    yield from _pasted_keys(spec, loc, file)
    ratio = lora.alpha / lora.r
    if not ALPHA_RATIO[0] <= ratio <= ALPHA_RATIO[1] and lora.alpha not in FIXED_ALPHAS:
        yield _finding("TG121", "warning", "lora.alpha",
                       f"lora.alpha / lora.r = {lora.alpha:g} / {lora.r} = {ratio:.3g} is far from the 1-2 of recipes "
                       "that scale alpha with the rank (alpha = r or 2r), and alpha is not one a fixed-alpha recipe uses",
                       f"Set lora.alpha to {lora.r} or {2 * lora.r} (the update is scaled by alpha / r), or fix it at 16 "
                       "or 32 whatever the rank, as TRL's LoRA Without Regret recipe does.", loc, file)


def _remote_code(spec: Spec, loc: Located, file: str, base: Path | None) -> Iterator[Finding]:
    """TG114: trust_remote_code without a revision, an error where the model's config maps custom code."""
    found = checkpoint.config_of(spec.model.id, base) if spec.model.trust_remote_code else None
    said = remote_code_finding(spec, custom_classes(found[1]) if found else None, found[0] if found else None)
    if said is not None:
        yield _finding(UNPINNED_REMOTE_CODE, said[0], "model.trust_remote_code", said[1], said[2], loc, file)


def _learning_rate(spec: Spec, loc: Located, file: str) -> Iterator[Finding]:
    t = spec.training
    if t.learning_rate >= MAX_LR:
        yield _finding("TG125", "error", "training.learning_rate",
                       f"training.learning_rate {t.learning_rate:g} is at least {MAX_LR:g}: no LoRA run survives "
                       "it (AdamW moves every adapter weight by about the learning rate at each step)",
                       "Use 1e-4 to 3e-4 for LoRA; a learning rate is never >= 1 with AdamW.", loc, file)
    elif t.learning_rate > HIGH_LR:
        yield _finding("TG120", "warning", "training.learning_rate",
                       f"training.learning_rate {t.learning_rate:g} is high for LoRA (above {HIGH_LR:g})",
                       "LoRA recipes use 1e-4 to 3e-4; a high rate often gives a NaN loss.", loc, file)
    elif t.learning_rate < LOW_LR:
        yield _finding("TG123", "warning", "training.learning_rate",
                       f"training.learning_rate {t.learning_rate:g} is so low the adapter will barely move",
                       "LoRA recipes use 1e-4 to 3e-4.", loc, file)
    if t.warmup_steps and t.warmup_ratio:
        yield _finding("TG153", "warning", "training.warmup_ratio",
                       f"both training.warmup_steps ({t.warmup_steps}) and training.warmup_ratio "
                       f"({t.warmup_ratio:g}) are set; warmup_steps wins", "Remove one of them.", loc, file)


def _pasted_keys(spec: Spec, loc: Located, file: str) -> Iterator[Finding]:
    if _KEY_LIKE.search(spec.advisor.api_key_env) and not spec.advisor.api_key_env.isupper():
        # Never echo the value: it may be the secret itself.
        yield _finding("TG116", "error", "advisor.api_key_env",
                       "advisor.api_key_env looks like an API key, not the name of an environment variable",
                       "Put the key in an environment variable and write its NAME here (e.g. OXLO_API_KEY); "
                       "rotate the key if this file was shared.", loc, file)
    for key, why in key_like_values(loc.data):
        # Never echo the value: it may be the secret itself.
        yield _finding(KEY_IN_A_VALUE, "error", key, f"the value of {key} looks like an API key ({why})",
                       "Remove it from the spec (every spec string can reach a log, an MLflow param or a "
                       "shared file); keep keys in the environment variable advisor.api_key_env names, and "
                       "rotate this key if the file was shared or committed.", loc, file)
    if _uri_has_password(spec.tracking.mlflow_uri):
        # Never echo the URI: the password is in it.
        yield _finding("TG165", "error", "tracking.mlflow_uri", "tracking.mlflow_uri holds a password",
                       "Write the URI without it (postgresql://user@host/db, https://host) and give the password "
                       "in the environment: PGPASSWORD for a database, MLFLOW_TRACKING_PASSWORD (or "
                       "MLFLOW_TRACKING_TOKEN) for a server; rotate it if this file was shared.", loc, file)


def _uri_has_password(uri: str | None) -> bool:
    from urllib.parse import urlsplit

    try:
        return bool(uri and urlsplit(uri).password)
    except ValueError:  # not a URI at all: the tracking layer says so when it opens it
        return False


def _gpu_name_rules(spec: Spec, loc: Located, file: str) -> Iterator[Finding]:
    """An unknown or ambiguous GPU name, or `hardware.custom` figures that need a second look."""
    hw = spec.hardware
    if hw.custom is not None:
        if "gpu" in hw.model_fields_set and gpus.lookup(hw.gpu) is not None:
            yield _finding("TG118", "error", "hardware.custom", f"hardware.custom is given, but hardware.gpu "
                           f"'{hw.gpu}' names a catalog GPU with its own datasheet figures",
                           "Give the custom GPU its own name in hardware.gpu, or remove hardware.custom to "
                           "use the catalog's figures.", loc, file)
            return
        c = hw.custom
        yield _finding("TG119", "info", "hardware.custom", f"the estimate uses your hardware.custom figures "
                       f"({c.memory_gib:g} GiB, {c.bf16_tflops or c.fp16_tflops or c.fp32_tflops:g} dense TFLOP/s, "
                       f"{c.bandwidth_gbs:g} GB/s); tunegate cannot check them against a datasheet",
                       "Check them against the vendor's datasheet: dense (not 2:4-sparse) tensor TFLOP/s, and "
                       "memory as CUDA reports it (GiB, below the marketed GB).", loc, file)
        return
    choices = gpus.ambiguous(hw.gpu)
    if choices:
        yield _finding("TG117", "error", "hardware.gpu", f"hardware.gpu '{hw.gpu}' is ambiguous: it could be "
                       f"{', '.join(choices)}, which differ in memory or speed",
                       f"Write one of {', '.join(choices)}.", loc, file)
    elif gpus.lookup(hw.gpu) is None:
        close = difflib.get_close_matches(hw.gpu, list(gpus.CATALOG), n=1, cutoff=0.4)
        yield _finding("TG109", "error", "hardware.gpu", f"unknown GPU '{hw.gpu}'",
                       (f"Did you mean '{close[0]}'? " if close else "")
                       + f"Known GPUs: {', '.join(gpus.CATALOG)}; for another one give its figures in "
                       "hardware.custom.", loc, file)


def _gpu_rules(spec: Spec, gpu: gpus.GPU, loc: Located, file: str) -> Iterator[Finding]:
    t = spec.training
    if t.precision == "bf16" and not gpu.supports_bf16:
        yield _finding("TG110", "error", "training.precision",
                       f"training.precision is bf16 but the {gpu.name} has no bf16 support",
                       "Use fp16 (with loss scaling) or fp32 on this GPU.", loc, file)
    if t.precision == "fp16" and gpu.supports_bf16:
        yield _finding("TG122", "warning", "training.precision",
                       f"training.precision is fp16 on a {gpu.name}, which supports bf16",
                       "Use bf16: same speed, and fp16's small range overflows to NaN losses.", loc, file)
    if t.attention == "flash_attention_2":
        if not gpu.flash_attention:
            yield _finding("TG111", "error", "training.attention",
                           f"flash_attention_2 needs an Ampere or newer GPU; the {gpu.name} is "
                           f"compute capability {gpu.compute_capability}",
                           "Use attention: sdpa.", loc, file)
        elif t.precision == "fp32":
            yield _finding("TG111", "error", "training.attention",
                           "flash_attention_2 runs only in fp16 or bf16, not fp32",
                           "Use precision: bf16, or attention: sdpa.", loc, file)


def _shared_file(spec: Spec) -> Path | None:
    """A training file that is also a validation file (each split may be several), if any."""
    return next((t for t in spec.data.files("train") for v in spec.data.files("validation") if same_file(t, v)), None)


