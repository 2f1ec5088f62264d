"""What every config import shares: what a dialect declares, the config being mapped, the result.

Each dialect module exports one `Dialect` as `DIALECT`; `tunegate.spec.importers.mapping` drives
the import, and the dialect's `map_config` (e.g. `tunegate.spec.importers.axolotl_dialect`) fills
a `ConfigMap` with the spec keys, where each came from, and what it noticed.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunegate.report import Finding, Severity
from tunegate.spec.yaml_loader import Located


@dataclass(frozen=True)
class Dialect:
    """A tool whose training configs tunegate reads as a spec: what detection, `--from`, the
    mapping and `translate` need to know of it (listed in `tunegate.spec.importers.registry`)."""

    name: str  # what --from takes and ParsedSpec.kind holds; the tool as findings name it
    markers: frozenset[str]  # top-level keys only this tool writes: detect_kind counts them
    map_config: Callable[[ConfigMap], None]  # fills a ConfigMap from one of its configs
    docs: str  # the page that lists what is mapped (TG140 and TG155 point there)
    runs_with: str  # the command that runs such a config itself, named in TG147's fix
    ignores_unknown: str  # what the tool does with a key it does not know, said in TG155
    fixes: Mapping[str, str]  # the spec stage's fix phrases (in hints) -> the same fix in this tool's keys
    # The key naming the base model, which the tool cannot train without: between dialects whose
    # markers a config has as many of, detect_kind takes one whose model key it has.
    model_key: str | None = None


@dataclass
class ConfigMap:
    """A config being mapped: the spec taking shape, where each part came from, what was noticed."""

    dialect: Dialect
    source: dict[str, Any]
    located: Located
    file: str
    base: Path  # the config's folder: relative data paths resolve here first
    overrides: dict[str, Path | list[Path]] = field(default_factory=dict)  # role -> what --train/--validation gave
    hardware: dict[str, Any] = field(default_factory=dict)  # --gpu/--gpus: the GPU a tool's "auto" setting meets
    data: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    explained: set[str] = field(default_factory=set)  # spec keys a finding here already says are missing
    unchecked: list[str] = field(default_factory=list)  # nested keys with a value that nothing maps
    at: tuple[str, Located] | None = None  # while `elsewhere`: the other file findings point into
    # role -> why its data cannot be had here (a Hub dataset not cached, a random or no validation split):
    # said by the dataset stage, so the spec stage and every check that needs no data still run
    unavailable: dict[str, Finding] = field(default_factory=dict)
    # role -> whether the tool trains its language-modeling text records ({"text": ...}): "also" (TRL's
    # SFTTrainer, besides chats), "only" (axolotl's completion and pretrain types); records the gate names as
    # such (TG271) are then no reason the tool refuses the run, and under "only" a record without text is.
    trains_text: dict[str, str] = field(default_factory=dict)
    # Settings the tool applies that lower GPU memory and the estimate does not model, as `key: value (what)`
    # (tunegate.spec.importers.memory_savers): a "does not fit" is then not judged (TG429)
    memory_savers: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """The dialect's name, as findings name the tool ("axolotl reads it as a name")."""
        return self.dialect.name

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
        """A finding about the config itself, at the original key's place (in the file `elsewhere` names)."""
        self.findings.append(self.finding(code, severity, key, message, hint))

    def finding(self, code: str, severity: Severity, key: str | None, message: str, hint: str,
                stage: str = "spec") -> Finding:
        """A finding at the original key's place (in the file `elsewhere` names), not yet noted."""
        file, located = self.at or (self.file, self.located)
        line, col = (located.place(key) or (None, None)) if key else (None, None)
        return Finding(code=code, severity=severity, stage=stage, message=message, hint=hint,
                       file=file, line=line, column=col, key=key)

    @contextmanager
    def elsewhere(self, file: str, located: Located) -> Iterator[None]:
        """Findings noted meanwhile point into `file` (a file the config names, such as LLaMA-Factory's
        dataset_info.json), at the keys as written there."""
        self.at = (file, located)
        try:
            yield
        finally:
            self.at = None

    def not_checked(self) -> None:
        """TG140: every key set to a value that no spec key took, listed once."""
        left = [str(k) for k in self.source if k not in self.used and self.source[k] not in (None, "", [], {})]
        left += self.unchecked
        if left:
            self.note("TG140", "info", None, f"not checked: {len(left)} {self.kind} key(s) tunegate does not model: "
                      f"{', '.join(left)}", f"tunegate neither checks nor runs these; see {self.dialect.docs} for "
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
    unavailable: dict[str, Finding] = field(default_factory=dict)  # role -> why its data cannot be had here
    refusal_codes: frozenset[str] = frozenset()  # codes of the import's findings tunegate launch refuses for
    trains_text: dict[str, str] = field(default_factory=dict)  # role -> "also" or "only" (ConfigMap.trains_text)
    memory_savers: list[str] = field(default_factory=list)  # ConfigMap.memory_savers
    runs_with: str = ""  # the command that runs the config (a TRL config of `trl dpo`); "": the dialect's
