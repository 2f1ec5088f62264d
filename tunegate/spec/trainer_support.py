"""What tunegate's own trainer cannot run: the spec stage rejects it, so no gate approves it.

The gate never approves what `tunegate launch` refuses. The trainer (`tunegate.fullrun.trainer`)
runs LoRA on one GPU or data parallel (one full copy of the base per GPU); it has no sharding
(ZeRO, FSDP), so `training.sharding` other than `none` is an error here (TG160), not a warning.
Quantized bases (QLoRA) and the 8-bit/paged optimizers load through bitsandbytes: without it
installed the trainer refuses them before loading anything, and so does this stage (TG161).
A checkpoint stored quantised (its config.json's `quantization_config`, as unsloth's `*-bnb-4bit`
and TheBloke's GPTQ and AWQ repos hold) loads through that quantisation's package whatever
model.quantization says: where model.id is a local folder or a config tunegate ships, a missing
bitsandbytes is TG161 too, a missing GPTQ or AWQ loader TG162. Checked by looking for the
packages, never importing them: the spec stage imports no torch.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from pathlib import Path

from tunegate.report import Finding
from tunegate.spec import checkpoint
from tunegate.spec.model import BNB_OPTIMIZERS, Spec


def unrunnable(spec: Spec, base: Path | None = None) -> Iterator[tuple[str, str, str, str]]:
    """(code, key, message, fix) for each setting the trainer cannot run on this install.

    `base` is the spec's folder: a relative model.id names a folder there first, as the estimate reads it.
    """
    t = spec.training
    if t.sharding != "none":
        yield ("TG160", "training.sharding",
               f"training.sharding '{t.sharding}' is not run by tunegate's trainer (no ZeRO or FSDP): "
               "tunegate launch would refuse it",
               "Set training.sharding: none (data parallel, one full copy of the base per GPU); for a base "
               "too big for one GPU, load it in 4 bit (model.quantization: 4bit, QLoRA) or use larger GPUs.")
    needs = [(key, value) for key, value, needed in (
        ("model.quantization", spec.model.quantization, spec.model.quantization != "none"),
        ("training.optimizer", t.optimizer, t.optimizer in BNB_OPTIMIZERS)) if needed]
    if needs and importlib.util.find_spec("bitsandbytes") is None:
        key = needs[0][0]
        what = " and ".join(f"{k} {v}" for k, v in needs)
        yield ("TG161", key, f"{what} need(s) bitsandbytes, which is not installed: tunegate launch would "
               "refuse the spec", "pip install 'tunegate[qlora]' (bitsandbytes; quantization also needs a "
               "CUDA GPU) where the gate and the run happen, or use model.quantization: none and "
               "training.optimizer: adamw_torch.")
    yield from _stored_quantization(spec, base)


def _stored_quantization(spec: Spec, base: Path | None) -> Iterator[tuple[str, str, str, str]]:
    """TG161/TG162: the checkpoint is stored quantised and this install lacks the package that loads it."""
    found = checkpoint.config_of(spec.model.id, base)
    stored = checkpoint.stored_quantization(found[1]) if found is not None else None
    problem = stored_loader_missing(spec, stored, found[0]) if stored is not None else None
    if problem is not None:
        yield problem


def stored_loader_missing(spec: Spec, stored: checkpoint.Stored, where: str) -> tuple[str, str, str, str] | None:
    """(code, key, message, fix) when loading a checkpoint stored as `stored` (its config read from
    `where`) needs a package this install lacks; the estimate says it too for a config from the hub."""
    missing = checkpoint.missing_loaders(stored.method)
    if not missing:
        return None
    names = " and ".join(missing)
    code = "TG161" if stored.method == "bitsandbytes" else "TG162"
    how = f"in {stored.bits} bit" if stored.bits else "quantised"
    return (code, "model.id",
            f"model.id '{spec.model.id}' is a checkpoint stored {how} with {stored.label} ({where}'s "
            f"quantization_config, quant_method {stored.method}): transformers loads it as stored whatever "
            f"model.quantization ({spec.model.quantization}) says, which needs {names}, not installed here: "
            "loading the base would fail",
            f"{checkpoint.install_hint(stored.method)} where the gate and the run happen, or point model.id at "
            "the unquantised (16-bit) checkpoint it was made from.")


def findings(spec: Spec, place, file: str, base: Path | None = None) -> Iterator[Finding]:
    """The TG160-TG162 errors as findings, at the key's line and column (`place(key) -> (line, col)`)."""
    return as_findings(unrunnable(spec, base), place, file)


def as_findings(problems: Iterable[tuple[str, str, str, str]], place, file: str) -> Iterator[Finding]:
    """(code, key, message, fix) problems as spec errors at the key's line and column."""
    for code, key, message, fix in problems:
        line, col = place(key) or (None, None)
        yield Finding(code=code, severity="error", stage="spec", message=message, hint=fix,
                      file=file, line=line, column=col, key=key)
