"""What tunegate's own trainer cannot run, whatever the machine: the sharding it does not have.

The trainer (`tunegate.fullrun.trainer`) runs LoRA on one GPU or data parallel (one full copy of the
base per GPU); it has no sharding (ZeRO, FSDP), so `training.sharding` other than `none` is refused
by `tunegate launch` (TG160). For a tunegate spec, whose trainer IS `tunegate launch`, that is an
error of the spec stage; for an axolotl or TRL config, whose own trainer shards, it is a warning
there (the import says so, `tunegate.spec.importers.mapping.translate`), and an error only where
tunegate's own run is approved or started: the mini-run and `tunegate launch`.

What the run machine needs (bitsandbytes, a stored checkpoint's loader, a CUDA GPU) is not refused
here: `tunegate.spec.run_machine` lists it as a requirement; the trainer refuses what is missing on
the machine it runs on (`unrunnable`).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tunegate.report import Finding
from tunegate.spec import run_machine
from tunegate.spec.model import Spec

CANNOT_SHARD = "TG160"  # the code of the one setting tunegate's trainer never runs (the importers test for it)


def refusals(spec: Spec) -> Iterator[tuple[str, str, str, str]]:
    """(code, key, message, fix) for each setting tunegate's trainer does not run, on any machine."""
    t = spec.training
    if t.sharding != "none":
        yield (CANNOT_SHARD, "training.sharding",
               f"training.sharding '{t.sharding}' is not run by tunegate's trainer (no ZeRO or FSDP): "
               "tunegate launch would refuse it",
               "Set training.sharding: none (data parallel, one full copy of the base per GPU); for a base "
               "too big for one GPU, load it in 4 bit (model.quantization: 4bit, QLoRA) or use larger GPUs.")


def unrunnable(spec: Spec, base: Path | None = None) -> Iterator[tuple[str, str, str, str]]:
    """(code, key, message, fix) for each reason the trainer cannot run `spec` on THIS machine: what it
    never runs (TG160), then the packages the run needs that are not installed here (TG161, TG162).

    `base` is the spec's folder: a relative model.id names a folder there first, as the estimate reads it.
    """
    yield from refusals(spec)
    yield from run_machine.missing_here(spec, base)


def findings(spec: Spec, place, file: str, base: Path | None = None) -> Iterator[Finding]:
    """The spec stage's TG160 (an error) and TG161/TG162 (info: requirements of the run machine)."""
    yield from as_findings(refusals(spec), place, file)
    yield from run_machine.findings(spec, place, file, base)


def as_findings(problems: Iterable[tuple[str, str, str, str]], place, file: str) -> Iterator[Finding]:
    """(code, key, message, fix) problems as spec errors at the key's line and column."""
    for code, key, message, fix in problems:
        line, col = place(key) or (None, None)
        yield Finding(code=code, severity="error", stage="spec", message=message, hint=fix,
                      file=file, line=line, column=col, key=key)
