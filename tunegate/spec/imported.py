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

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunegate.report import Finding
from tunegate.spec.model import Spec
from tunegate.spec.yaml_loader import Located

if TYPE_CHECKING:  # loaded by import_config: a tunegate spec never needs the mapping machinery
    from tunegate.spec.config_map import Mapped

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


def import_config(kind: str, located: Located, file: str, base: Path,
                  data: dict[str, Path] | None = None) -> Mapped:
    """Map a config of `kind` (axolotl or trl) onto a tunegate spec mapping; `data` (role -> file)
    replaces the config's datasets for those roles (TG157)."""
    from tunegate.spec import axolotl_config, trl_config
    from tunegate.spec.config_map import ConfigMap, Mapped

    cmap = ConfigMap(kind, located.data, located, file, base, overrides=dict(data or {}))
    (axolotl_config.map_config if kind == "axolotl" else trl_config.map_config)(cmap)
    cmap.not_checked()
    places = {spec_key: located.places[orig] for spec_key, orig in cmap.origin.items() if orig in located.places}
    for spec_key in list(places):  # sections too, so a finding about a section points somewhere
        places.setdefault(spec_key.partition(".")[0], places[spec_key])
    return Mapped(kind, cmap.data, cmap.origin, cmap.findings, Located(data=cmap.data, places=places),
                  frozenset(cmap.explained))


# The spec's fixes in each tool's own keys (the spec stage words them for a tunegate spec).
_FIXES = {
    "axolotl": {"use model.quantization: none and training.optimizer: adamw_torch": "use adapter: lora without "
                "load_in_4bit or load_in_8bit, and optimizer: adamw_torch",
                "Set training.sharding: none (data parallel, one full copy of the base per GPU)": "Remove deepspeed "
                "and fsdp/fsdp_config (tunegate runs data parallel, one full copy of the base per GPU)",
                "load it in 4 bit (model.quantization: 4bit, QLoRA)": "load it in 4 bit (adapter: qlora, "
                "load_in_4bit: true)"},
    "trl": {"use model.quantization: none and training.optimizer: adamw_torch": "use load_in_4bit: false, "
            "load_in_8bit: false and optim: adamw_torch",
            "Set training.sharding: none (data parallel, one full copy of the base per GPU)": "Drop the FSDP or "
            "DeepSpeed settings (tunegate runs data parallel, one full copy of the base per GPU)",
            "load it in 4 bit (model.quantization: 4bit, QLoRA)": "load it in 4 bit (load_in_4bit: true, QLoRA)"},
}
# The spec's values in each tool's words, where the finding names the value beside its key.
_VALUES = {"model.quantization 4bit": "4-bit loading (QLoRA)", "model.quantization 8bit": "8-bit loading"}


def translate(finding: Finding, mapped: Mapped) -> Finding | None:
    """A spec-stage finding about a mapped key, named by the original key it came from (None when a
    finding of the import already says the same, e.g. no validation file, or a sharding TG160 names)."""
    if finding.code == "TG104" and (finding.key in mapped.explained
                                    or any(k.startswith(f"{finding.key}.") for k in mapped.explained)):
        return None
    if finding.code == "TG115":  # sharding on one GPU: TG160 already refuses the sharding itself
        return None
    message, hint = finding.message, finding.hint
    for phrase, words in _FIXES.get(mapped.kind, {}).items():
        hint = hint.replace(phrase, words)
    for phrase, words in _VALUES.items():
        message = message.replace(phrase, words)
    for spec_key, orig in sorted(mapped.origin.items(), key=lambda kv: -len(kv[0])):
        message, hint = message.replace(spec_key, _shown(orig)), hint.replace(spec_key, _shown(orig))
    orig = mapped.origin.get(finding.key or "")
    key = _shown(orig) if orig is not None and finding.key is not None else finding.key
    return finding.model_copy(update={"key": key, "message": message, "hint": hint})


def _shown(orig: str) -> str:
    return orig.replace(".0.", "[0].") if orig[:1].isalpha() else orig
