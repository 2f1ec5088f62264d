"""Which trainer the advice is for, and which settings it can run: only those are offered or verified.

    trainer = trainer_for(kind_of(spec_path))   # a tunegate spec: tunegate's trainer (tunegate launch)
    trainer.refuses("training.sharding")         # "tunegate's trainer runs no ZeRO or FSDP sharding (TG160)"

A tunegate spec runs on tunegate's own trainer, which trains data parallel with one full copy of
the base per GPU (`tunegate.spec.trainer_support`): a sharding suggestion is one it would refuse,
so it is never offered to the LLM and never verified as advice. An axolotl or TRL config runs on
that tool, which shards (DeepSpeed ZeRO, FSDP) and compiles (torch_compile, torch_compile_mode):
every allowed setting is offered. A dialect registered later gets every setting until it is listed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tunegate.advisor.advice import ALLOWED_SETTINGS, HARDWARE_SETTINGS


@dataclass(frozen=True)
class Trainer:
    """A trainer the advice may target: its name as advice says it, and what it cannot run."""

    kind: str  # the config kind (tunegate.spec.importers.KINDS)
    name: str
    cannot_run: dict[str, str] = field(default_factory=dict)  # setting -> why this trainer refuses a change to it

    def settings(self, new_hardware: bool) -> list[str]:
        """The settings offered: every allowed one it runs; the hardware's only when `new_hardware`."""
        offered = ALLOWED_SETTINGS - set(self.cannot_run) - (set() if new_hardware else HARDWARE_SETTINGS)
        return sorted(offered)

    def refuses(self, setting: str) -> str | None:
        """Why this trainer cannot run a change of `setting`, or None when it can."""
        return self.cannot_run.get(setting)


TRAINERS = {
    "tunegate": Trainer("tunegate", "tunegate's trainer (tunegate launch)", {
        "training.sharding": "tunegate's trainer runs no ZeRO or FSDP sharding (TG160): tunegate launch "
                             "would refuse it"}),
    "axolotl": Trainer("axolotl", "axolotl"),
    "trl": Trainer("trl", "TRL (trl sft)"),
}


def trainer_for(kind: str) -> Trainer:
    """The trainer a config of `kind` runs on (a dialect not listed: that tool, every setting)."""
    return TRAINERS.get(kind) or Trainer(kind, kind)


def kind_of(spec_path: Path | str | None) -> str:
    """The tool the file at `spec_path` is written for, detected from its keys as the spec stage does."""
    if spec_path is None:
        return "tunegate"
    from tunegate.errors import YamlSyntaxError
    from tunegate.spec import yaml_loader
    from tunegate.spec.importers.registry import detect_kind

    try:
        located = yaml_loader.load(Path(spec_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, YamlSyntaxError):
        return "tunegate"
    return detect_kind(located.data)
