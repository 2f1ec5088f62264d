"""Training configs users already have (axolotl, TRL's `trl sft --config`, LLaMA-Factory), read as a tunegate spec.

    tunegate check tests/data/configs/axolotl/lora-1b.yml   # detected from its keys
    tunegate check sft.yaml --from trl

`import_config` maps a config of a registered dialect onto the spec with that tool's own defaults
for every key it leaves out (axolotl's lora_dropout is 0.0, TRL's learning rate 2e-5, ...),
remembering which original key each spec key came from. The spec stage then validates the mapped
spec as usual, and `translate` moves each finding back to the ORIGINAL file, line and key
(`lora-1b.yml:24:1 (lora_dropout) TG103 ...`). Keys tunegate does not model are listed once
(TG140), never silently dropped. Each dialect's mapping rules are its own module
(`tunegate.spec.importers.registry` lists them); its docs page shows what is mapped and what is not.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tunegate.report import Finding
from tunegate.spec.importers.registry import dialect
from tunegate.spec.rules import SHARDING_ON_ONE_GPU
from tunegate.spec.trainer_support import CANNOT_SHARD
from tunegate.spec.schema_errors import MISSING_KEY
from tunegate.spec.yaml_loader import Located

if TYPE_CHECKING:  # loaded by import_config: a tunegate spec never needs the mapping machinery
    from tunegate.spec.importers.config_map import Mapped


def import_config(kind: str, located: Located, file: str, base: Path,
                  data: dict[str, Path | list[Path]] | None = None, hardware: dict | None = None) -> Mapped:
    """Map a config of dialect `kind` onto a tunegate spec mapping; `data` (role -> file or files) replaces the
    config's datasets for those roles (TG157); `hardware` (--gpu/--gpus) is the GPU the run meets."""
    from tunegate.spec.importers.config_map import ConfigMap, Mapped
    from tunegate.spec.importers.unhonoured import NOT_HONOURED, NOT_LORA

    tool = dialect(kind)
    cmap = ConfigMap(tool, located.data, located, file, base, overrides=dict(data or {}), hardware=dict(hardware or {}))
    tool.map_config(cmap)
    cmap.not_checked()
    places = {spec_key: located.places[orig] for spec_key, orig in cmap.origin.items() if orig in located.places}
    for spec_key in list(places):  # sections too, so a finding about a section points somewhere
        places.setdefault(spec_key.partition(".")[0], places[spec_key])
    return Mapped(kind, cmap.data, cmap.origin, cmap.findings, Located(data=cmap.data, places=places),
                  frozenset(cmap.explained), dict(cmap.unavailable), frozenset({NOT_HONOURED, NOT_LORA}),
                  dict(cmap.trains_text), list(cmap.memory_savers), cmap.dialect.runs_with)


# The spec's values in each tool's words, where the finding names the value beside its key.
_VALUES = {"model.quantization 4bit": "4-bit loading (QLoRA)", "model.quantization 8bit": "8-bit loading",
           "training.attention flash_attention_2": "the flash_attention_2 kernel"}


def translate(finding: Finding, mapped: Mapped) -> Finding | None:
    """A spec-stage finding about a mapped key, named by the original key it came from (None when a
    finding of the import already says the same, e.g. no validation file, or a sharding TG160 names).

    What only tunegate's own trainer refuses (TG160: the sharding axolotl and TRL run) is a warning
    for a config of another tool: its own trainer runs it; the mini-run and `tunegate launch` refuse it.
    """
    if finding.code == MISSING_KEY and (finding.key in mapped.explained
                                        or any(k.startswith(f"{finding.key}.") for k in mapped.explained)):
        return None
    if finding.code == SHARDING_ON_ONE_GPU:  # sharding on one GPU: TG160 already refuses the sharding itself
        return None
    message, hint = finding.message, finding.hint
    for phrase, words in dialect(mapped.kind).fixes.items():  # the spec's fixes in the tool's own keys
        hint = hint.replace(phrase, words)
    message, hint = translate_words(message, mapped), translate_words(hint, mapped)
    orig = mapped.origin.get(finding.key or "")
    key = _shown(orig) if orig is not None and finding.key is not None else finding.key
    update = {"key": key, "message": message, "hint": hint}
    if finding.code == CANNOT_SHARD:
        update.update(severity="warning", message=f"{message}; {dialect(mapped.kind).runs_with} runs it, so this "
                      "is a warning here and an error only for tunegate's own run (the mini-run, tunegate launch)")
    return finding.model_copy(update=update)


def name_original(finding: Finding, kind: str, origin: dict[str, str],
                  places: dict[str, tuple[int, int]]) -> Finding:
    """A later stage's finding (the estimate's, the mini-run's) about a spec key an imported config's key
    became, named as the spec stage names it: the original key, its line and column, the tool's words.

    `origin` and `places` are the import's (`ParsedSpec.origin`, `ParsedSpec.places`): spec key -> original
    key, spec key -> where that original key was written."""
    from tunegate.spec.importers.config_map import Mapped

    mapped = Mapped(kind, {}, origin, [], Located(data={}, places=dict(places)))
    named = translate(finding, mapped)
    if named is None or finding.key not in origin:
        return named or finding
    line, col = places.get(finding.key, (None, None))
    return named.model_copy(update={"line": finding.line or line, "column": finding.column or col})


def translate_words(text: str, mapped: Mapped) -> str:
    """`text` with each spec key a mapped key came from named by its original key (and the spec's
    values in the tool's words, where the text names the value beside its key)."""
    for phrase, words in _VALUES.items():
        text = text.replace(phrase, words)
    for spec_key, orig in sorted(mapped.origin.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(spec_key, _shown(orig))
    return text


def original_key(key: str | None, mapped: Mapped) -> str | None:
    """The original key a spec key came from (as findings show it), else the spec key itself."""
    orig = mapped.origin.get(key or "")
    return _shown(orig) if orig is not None else key


def _shown(orig: str) -> str:
    return orig.replace(".0.", "[0].") if orig[:1].isalpha() else orig
