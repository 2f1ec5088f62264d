"""What the machine that runs the training needs, each with whether this machine has it.

    needs = requirements(spec, spec_folder)   # [{"need": "bitsandbytes", "met_here": False, ...}, ...]

The gate runs on a laptop or a CI runner; the training runs on a GPU box, through the config's own
trainer (axolotl, `trl sft`) or `tunegate launch`. A package the run loads (bitsandbytes for a
4-bit or 8-bit base and the bitsandbytes optimizers, a stored checkpoint's GPTQ or AWQ loader,
flash-attn for flash_attention_2) and a CUDA GPU are requirements of the RUN machine: the spec
stage lists them (the report's `requirements`, each with where it must hold) and names one this
machine lacks in an info finding (TG161, TG162), but never fails for it. Where the run happens
they are enforced: by `tunegate launch` (`tunegate.fullrun.trainer`) and by the mini-run on a GPU.
Checked by looking for the packages, never importing them: the spec stage imports no torch.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.report import Finding
from tunegate.spec import checkpoint
from tunegate.spec.model import BNB_OPTIMIZERS, Spec

RUN_MACHINE = "run machine"  # where the training runs: the GPU box, for the config's trainer or tunegate launch
QLORA_INSTALL = ("pip install 'tunegate[qlora]' (bitsandbytes; quantization also needs a CUDA GPU), or the "
                 "trainer's own extra (axolotl, trl) that brings it")


def bitsandbytes_needs(spec: Spec) -> list[tuple[str, str]]:
    """(key, value) of each setting that loads through bitsandbytes: a quantized base, an 8-bit or paged optimizer."""
    return [(key, value) for key, value, needed in (
        ("model.quantization", spec.model.quantization, spec.model.quantization != "none"),
        ("training.optimizer", spec.training.optimizer, spec.training.optimizer in BNB_OPTIMIZERS)) if needed]


def requirements(spec: Spec, base: Path | None = None) -> list[dict[str, Any]]:
    """The run machine's requirements for `spec`, in the report's shape (`tunegate.report.Requirement`)."""
    found: list[dict[str, Any]] = []
    if needs := bitsandbytes_needs(spec):
        found.append(_package("bitsandbytes", "bitsandbytes", _what(needs), needs[0][0], QLORA_INSTALL))
    stored = _stored(spec, base)
    if stored is not None:
        method, where = stored
        for name in checkpoint.LOADERS.get(method.method, ()):
            found.append(_package(checkpoint.pip_name(name[0]), name, f"model.id: a checkpoint stored with "
                                  f"{method.label} ({where})", "model.id", checkpoint.install_hint(method.method)))
    if spec.training.attention == "flash_attention_2":
        found.append(_package("flash-attn", ("flash_attn",), "training.attention flash_attention_2",
                              "training.attention", "pip install flash-attn --no-build-isolation"))
    found = list({r["need"]: r for r in reversed(found)}.values())[::-1]  # a stored bitsandbytes base says it once
    if spec.model.quantization != "none" or (stored is not None and stored[0].method == "bitsandbytes"):
        what = f"model.quantization {spec.model.quantization}" if spec.model.quantization != "none" else \
            "model.id: a checkpoint stored with bitsandbytes"
        found.append({"need": "a CUDA GPU", "kind": "hardware", "reason": f"{what} (bitsandbytes runs on CUDA only)",
                      "key": "model.quantization", "where": RUN_MACHINE, "met_here": None})
    return found


def missing_here(spec: Spec, base: Path | None = None) -> Iterator[tuple[str, str, str, str]]:
    """(code, key, message, fix) for each package the run needs that THIS machine lacks: TG161 for
    bitsandbytes, TG162 for a stored checkpoint's GPTQ or AWQ loader. `tunegate launch` refuses them
    (it is the run machine); the spec stage only names them (`findings`)."""
    if (needs := bitsandbytes_needs(spec)) and importlib.util.find_spec("bitsandbytes") is None:
        yield ("TG161", needs[0][0], f"{_what(needs)} need(s) bitsandbytes, which is not installed on this machine",
               f"{QLORA_INSTALL} where the run happens, or use model.quantization: none and "
               "training.optimizer: adamw_torch.")
    stored = _stored(spec, base)
    if stored is not None and (problem := stored_loader_missing(spec, *stored)) is not None:
        yield problem


def findings(spec: Spec, place, file: str, base: Path | None = None) -> Iterator[Finding]:
    """The spec stage's TG161 and TG162, info: a package the run machine needs and this machine lacks
    is named with where it must hold, never a failure of the check."""
    for code, key, message, fix in missing_here(spec, base):
        line, col = place(key) or (None, None)
        yield Finding(code=code, severity="info", stage="spec", message=f"{message}: a requirement of the "
                      f"{RUN_MACHINE}, not of this check (the mini-run on a GPU and tunegate launch check it where "
                      "they run)", hint=f"Nothing to fix for this check. {fix}", file=file, line=line,
                      column=col, key=key)


def stored_loader_missing(spec: Spec, stored: checkpoint.Stored, where: str) -> tuple[str, str, str, str] | None:
    """(code, key, message, fix) when loading a checkpoint stored as `stored` (its config read from
    `where`) needs a package this machine lacks; the estimate says it too for a config from the hub."""
    missing = checkpoint.missing_loaders(stored.method)
    if not missing:
        return None
    names = " and ".join(missing)
    code = "TG161" if stored.method == "bitsandbytes" else "TG162"
    how = f"in {stored.bits} bit" if stored.bits else "quantised"
    return (code, "model.id",
            f"model.id '{spec.model.id}' is a checkpoint stored {how} with {stored.label} ({where}'s "
            f"quantization_config, quant_method {stored.method}): transformers loads it as stored whatever "
            f"model.quantization ({spec.model.quantization}) says, which needs {names}, not installed on this "
            "machine",
            f"{checkpoint.install_hint(stored.method)} where the run happens, or point model.id at the "
            "unquantised (16-bit) checkpoint it was made from.")


def _stored(spec: Spec, base: Path | None) -> tuple[checkpoint.Stored, str] | None:
    found = checkpoint.config_of(spec.model.id, base)
    stored = checkpoint.stored_quantization(found[1]) if found is not None else None
    return (stored, found[0]) if stored is not None else None


def _what(needs: list[tuple[str, str]]) -> str:
    return " and ".join(f"{k} {v}" for k, v in needs)


def _package(need: str, modules: str | tuple[str, ...], reason: str, key: str, install: str) -> dict[str, Any]:
    names = (modules,) if isinstance(modules, str) else modules
    return {"need": need, "kind": "package", "reason": reason, "key": key, "where": RUN_MACHINE,
            "met_here": any(importlib.util.find_spec(m) is not None for m in names), "install": install}
