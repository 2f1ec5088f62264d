"""Training configs users already have (axolotl, TRL's `trl sft --config`), read as a tunegate spec.

    tunegate check examples/axolotl/lora-1b.yml            # detected from its keys
    tunegate check sft.yaml --from trl

`detect_kind` tells a config's tool from its keys; `import_config` maps it onto the spec with
that tool's own defaults for every key it leaves out (axolotl's lora_dropout is 0.0, TRL's
learning rate 2e-5, ...), remembering which original key each spec key came from. The spec stage
then validates the mapped spec as usual, and `translate` moves each finding back to the ORIGINAL
file, line and key (`lora-1b.yml:24:1 (lora_dropout) TG103 ...`). Keys tunegate does not model are
listed once (TG140), never silently dropped. Mapping rules per tool: `tunegate.spec.axolotl_config`,
`tunegate.spec.trl_config`; docs/axolotl.md and docs/trl.md show what is mapped and what is not.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunegate.report import Finding, Severity
from tunegate.spec.model import Spec
from tunegate.spec.yaml_loader import Located

KINDS = ("tunegate", "axolotl", "trl")
# Keys only that tool writes at the top level (a tunegate spec has sections: model, data, ...).
_MARKERS = {
    "axolotl": {"base_model", "datasets", "sequence_len", "micro_batch_size", "num_epochs", "adapter",
                "lora_target_linear", "sample_packing", "val_set_size", "test_datasets"},
    "trl": {"model_name_or_path", "dataset_name", "per_device_train_batch_size", "num_train_epochs",
            "use_peft", "max_length", "dataset_train_split", "dataset_test_split"},
}


def detect_kind(data: Any) -> str:
    """The tool a config is written for: the one whose marker keys it has most of, else tunegate."""
    if not isinstance(data, dict) or set(data) & set(Spec.model_fields):
        return "tunegate"
    hits = {kind: len(set(data) & keys) for kind, keys in _MARKERS.items()}
    best = max(hits, key=lambda k: hits[k])
    return best if hits[best] else "tunegate"


@dataclass
class ConfigMap:
    """A config being mapped: the spec taking shape, where each part came from, what was noticed."""

    kind: str
    source: dict[str, Any]
    located: Located
    file: str
    base: Path  # the config's folder: relative data paths resolve here first
    data: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    explained: set[str] = field(default_factory=set)  # spec keys a finding here already says are missing
    unchecked: list[str] = field(default_factory=list)  # nested keys with a value that nothing maps

    def get(self, key: str, default: Any = None) -> Any:
        """The config's value at a top-level key (None counts as absent), marking the key as read."""
        self.used.add(key)
        value = self.source.get(key)
        return default if value is None else value

    def has(self, key: str) -> bool:
        return self.source.get(key) is not None

    def set(self, spec_key: str, value: Any, from_key: str | None = None) -> None:
        """Set a dotted spec key; `from_key` is the config key it came from (None: the tool's default)."""
        section, _, name = spec_key.partition(".")
        self.data.setdefault(section, {})[name] = value
        if from_key is not None and self.located.place(from_key) is not None:
            self.origin[spec_key] = from_key

    def note(self, code: str, severity: Severity, key: str | None, message: str, hint: str) -> None:
        """A finding about the config itself, at the original key's place."""
        line, col = (self.located.place(key) or (None, None)) if key else (None, None)
        self.findings.append(Finding(code=code, severity=severity, stage="spec", message=message, hint=hint,
                                     file=self.file, line=line, column=col, key=key))

    def not_checked(self) -> None:
        """TG140: every key set to a value that no spec key took, listed once."""
        left = [k for k in self.source if k not in self.used and self.source[k] not in (None, "", [], {})]
        left += self.unchecked
        if left:
            self.note("TG140", "info", None, f"not checked: {len(left)} {self.kind} key(s) tunegate does not model: "
                      f"{', '.join(left)}", f"tunegate neither checks nor runs these; see docs/{self.kind}.md for "
                      "what is mapped. Keys set to null are not listed.")


@dataclass(frozen=True)
class Mapped:
    """A config mapped onto the spec."""

    kind: str
    data: dict[str, Any]
    origin: dict[str, str]
    findings: list[Finding]
    located: Located  # places of the spec keys, at the original keys they came from
    explained: frozenset[str] = frozenset()


def import_config(kind: str, located: Located, file: str, base: Path) -> Mapped:
    """Map a config of `kind` (axolotl or trl) onto a tunegate spec mapping."""
    from tunegate.spec import axolotl_config, trl_config

    cmap = ConfigMap(kind, located.data, located, file, base)
    (axolotl_config.map_config if kind == "axolotl" else trl_config.map_config)(cmap)
    cmap.not_checked()
    places = {spec_key: located.places[orig] for spec_key, orig in cmap.origin.items() if orig in located.places}
    for spec_key in list(places):  # sections too, so a finding about a section points somewhere
        places.setdefault(spec_key.partition(".")[0], places[spec_key])
    return Mapped(kind, cmap.data, cmap.origin, cmap.findings, Located(data=cmap.data, places=places),
                  frozenset(cmap.explained))


def translate(finding: Finding, mapped: Mapped) -> Finding | None:
    """A spec-stage finding about a mapped key, named by the original key it came from (None when a
    finding of the import already says the same, e.g. no validation file)."""
    if finding.code == "TG104" and (finding.key in mapped.explained
                                    or any(k.startswith(f"{finding.key}.") for k in mapped.explained)):
        return None
    orig = mapped.origin.get(finding.key or "")
    if orig is None or finding.key is None:
        return finding
    shown = orig.replace(".0.", "[0].") if orig[:1].isalpha() else orig
    return finding.model_copy(update={"key": shown, "message": finding.message.replace(finding.key, shown),
                                      "hint": finding.hint.replace(finding.key, shown)})
