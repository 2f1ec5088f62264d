"""A config being mapped onto the spec, and the result: the shared state of every config import.

`tunegate.spec.imported` drives the import; `tunegate.spec.axolotl_config` and
`tunegate.spec.trl_config` fill a `ConfigMap` with the spec keys, where each came from, and
what they noticed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunegate.report import Finding, Severity
from tunegate.spec.model import Optimizer, Scheduler
from tunegate.spec.yaml_loader import Located

# What the full run honours, for either tool's optimizer and scheduler keys.
OPTIMIZERS = frozenset(Optimizer.__args__)  # type: ignore[attr-defined]
SCHEDULERS = frozenset(Scheduler.__args__)  # type: ignore[attr-defined]


@dataclass
class ConfigMap:
    """A config being mapped: the spec taking shape, where each part came from, what was noticed."""

    kind: str
    source: dict[str, Any]
    located: Located
    file: str
    base: Path  # the config's folder: relative data paths resolve here first
    overrides: dict[str, Path] = field(default_factory=dict)  # role -> the file --train/--validation gave
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

    def choose(self, key: str, spec_key: str, default: str, allowed: frozenset[str]) -> None:
        """Map a config key whose value must be one the full run honours: TG147 for any other name,
        and the tool's default in its place (the finding already says the run cannot honour it).
        A value that is no name at all goes to the spec as it is, whose TG102 lists the names."""
        value = self.get(key, default)
        if not isinstance(value, str):
            self.set(spec_key, value, key)
            return
        if value not in allowed:
            self.note("TG147", "error", key, f"{key} {value!r} is not one tunegate's full run can honour",
                      f"Use one of: {', '.join(sorted(allowed))}.")
        self.set(spec_key, value if value in allowed else default, key)

    def text(self, key: str, value: Any, default: str) -> str | None:
        """`value` (read at `key`) when it is text, `default` when it is absent; otherwise TG102 at
        the key, and None: the tools read these keys as names."""
        if value is None:
            return default
        if isinstance(value, str):
            return value
        name = key.rpartition(".")[2]  # the finding's key says where: datasets.0.split
        self.note("TG102", "error", key, f"{name} is {value!r}; {self.kind} reads it as a name (text)",
                  f"Write {name} as one name, e.g. {name}: {default}.")
        return None

    def note(self, code: str, severity: Severity, key: str | None, message: str, hint: str) -> None:
        """A finding about the config itself, at the original key's place."""
        line, col = (self.located.place(key) or (None, None)) if key else (None, None)
        self.findings.append(Finding(code=code, severity=severity, stage="spec", message=message, hint=hint,
                                     file=self.file, line=line, column=col, key=key))

    def not_checked(self) -> None:
        """TG140: every key set to a value that no spec key took, listed once."""
        left = [str(k) for k in self.source if k not in self.used and self.source[k] not in (None, "", [], {})]
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
