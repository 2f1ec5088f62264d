"""Stage 0: read and validate the spec, turning every problem into a finding with its line and fix.

Run: `tunegate check examples/quickstart.yaml`

    parsed = parse_spec("examples/quickstart.yaml")   # read once: the spec, its digest, its findings
    report = check(parsed)                           # later steps take the parsed value, not the path

The digest is taken from the same bytes that were validated, so the digest logged beside a run's
params is the digest of the spec those params came from.
"""
# Annotations are real types here, not `from __future__ import annotations` strings: pydantic
# would compile and evaluate each field's type from its text when the models are built, at every
# start-up (~2 % of a rejection's instructions over the report, facts and spec models; issue 15).

import codecs
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tunegate.errors import UsageError, YamlSyntaxError
from tunegate.pathguard import read_regular, shown
from tunegate.report import LAUNCH, Finding, FindingCollector, StageResult
from tunegate.spec import importers, run_machine, trainer_support, yaml_loader
from tunegate.spec.digest import digest_bytes
from tunegate.spec.model import Spec
from tunegate.spec.rules import check_rules
from tunegate.spec.schema_errors import add_validation_error
from tunegate.spec.sweep_rules import sweep_findings

STAGE = "spec"
# 1 MiB: a real spec is a few KB (the largest sweep we ship is under 4 KB). Anything bigger is not
# a config, and PyYAML needs ~0.7 s per MiB, so a 100 MB file would hold the gate for a minute.
MAX_SPEC_BYTES = 1 << 20


class ParsedSpec(BaseModel):
    """A spec read once: where it is, the digest of its bytes, the spec stage's result, the spec.

    Small and serialisable, so a flow parses in its first task and hands this to every later one.
    `spec` is None when the spec stage failed.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    digest: str
    result: StageResult
    spec: Spec | None = None
    # The YAML mapping as written (relative paths unresolved): what a sweep applies overrides to.
    # For a config of another tool (axolotl, TRL, ...), the spec it maps onto.
    raw: dict[Any, Any] | None = None
    kind: str = "tunegate"  # or the name of a registered dialect (importers.KINDS): the tool the file was written for
    # role -> why its data cannot be had here (an imported config's Hub dataset not cached, a random or no
    # validation split: TG141-TG143); the dataset stage reports it and every check that needs no data runs
    unavailable: dict[str, Finding] = {}
    # An imported config's spec keys -> the original keys they came from, and where those were written:
    # the gate names later stages' findings by them, as the spec stage does (importers.name_original).
    origin: dict[str, str] = {}
    places: dict[str, tuple[int, int]] = {}

    @property
    def valid(self) -> bool:
        return self.spec is not None

    def require(self) -> Spec:
        """The spec, or a UsageError listing its errors (for commands past the gate)."""
        if self.spec is None:
            lines = [f"{f.place()} {f.code} {f.message}" for f in self.result.findings if f.severity == "error"]
            raise UsageError(f"the spec {self.path} is invalid:\n  " + "\n  ".join(lines)
                             + f"\nRun `tunegate check {self.path}` for the fixes.")
        return self.spec


def parse_spec(path: str | Path, cap: int = 20, kind: str | None = None,
               data: dict[str, Path | list[Path]] | None = None,
               hardware: dict[str, Any] | None = None) -> ParsedSpec:
    """Read and validate the spec at `path` once. Raises UsageError only when it cannot be read at all.

    `path` may also be another tool's config (axolotl, TRL, ...), detected from its keys or named by
    `kind` (one of `importers.KINDS`); it is mapped onto the spec (`tunegate.spec.importers`). `data`
    ({"train": path, "validation": path}, `tunegate check --train/--validation`; a list of paths for a
    split of several files) replaces a config's datasets for that role (TG157): its Hub ids need not
    be cached then. `hardware` ({"gpu": name,
    "count": n}: `--gpu`, `--gpus`) replaces the file's hardware.gpu and hardware.count.
    """
    if kind is not None and kind not in importers.KINDS:
        raise UsageError(f"unknown config kind {kind!r}; expected one of {', '.join(importers.KINDS)}")
    raw = _read_bytes(Path(path))
    if len(raw) > MAX_SPEC_BYTES:
        return ParsedSpec(path=str(path), digest=digest_bytes(raw), result=_too_large(Path(path)))
    result, spec, mapping, mapped = _validate_text(Path(path), _decode(Path(path), raw), cap, kind, data or {},
                                                   hardware or {})
    named = {"unavailable": mapped.unavailable, "origin": mapped.origin, "places": mapped.located.places} if mapped else {}
    return ParsedSpec(path=str(path), digest=digest_bytes(raw), result=result, spec=spec,
                      raw=mapping if isinstance(mapping, dict) else None, kind=result.stats.get("kind", "tunegate"),
                      **named)


def in_config_words(finding: Finding, parsed: ParsedSpec) -> Finding:
    """A later stage's finding about an imported config's key, named by its original key and place (as
    the spec stage names its own); other findings as they are."""
    if parsed.kind == "tunegate" or finding.file != shown(Path(parsed.path)) or not finding.key:
        return finding
    return importers.name_original(finding, parsed.kind, parsed.origin, parsed.places)


def _too_large(path: Path) -> StageResult:
    """TG133, without parsing: the file is not read past the limit."""
    out = FindingCollector(STAGE)
    try:
        size = f"{path.stat().st_size / (1 << 20):,.1f} MiB"
    except OSError:
        size = "larger than that"
    out.add("TG133", "error", f"the spec is {size}, over the {MAX_SPEC_BYTES >> 20} MiB a spec may be",
            "A spec is a short config; keep data in the files data.train and data.validation name. "
            "Is this the right file?", file=shown(path), line=1, column=1)
    return out.result(0.0)


def read_spec(path: str | Path, cap: int = 20) -> tuple[StageResult, Spec | None]:
    """Validate the spec at `path`; return the stage result and the spec (None when invalid).

    Raises UsageError only when the file cannot be read at all.
    """
    parsed = parse_spec(path, cap)
    return parsed.result, parsed.spec


def _validate_text(path: Path, text: str, cap: int, kind: str | None = None, data: dict[str, Any] | None = None,
                   hardware: dict[str, Any] | None = None) -> tuple[StageResult, Spec | None, Any, Any]:
    start = time.perf_counter()
    out = FindingCollector(STAGE, cap)
    where = shown(path)
    try:
        located = yaml_loader.load(text)
    except YamlSyntaxError as exc:
        what = "the spec is not valid YAML: " if exc.code == yaml_loader.NOT_YAML else ""
        out.add(exc.code, "error", f"{what}{exc}", _YAML_HINTS[exc.code],
                file=where, line=exc.line, column=exc.column)
        return out.result(time.perf_counter() - start), None, None, None
    for problem in located.refused:
        out.add("TG130", "error", f"{problem.message}; a spec holds only strings, numbers, booleans, null, "
                "lists and mappings", "Remove the tag (`!!...` or `!...`) and write the plain value.",
                file=where, line=problem.line, column=problem.column, key=problem.key or None)
    for key, line, col, first in located.duplicates:
        out.add("TG105", "error", f"key '{key}' is written twice (first on line {first}); YAML would "
                "silently keep the last value", "Delete one of the two lines.",
                file=where, line=line, column=col, key=key)
    if not isinstance(located.data, dict):
        got = "empty" if located.data is None else f"a {type(located.data).__name__}"
        out.add("TG113", "error", f"the spec must be a mapping of sections (model, data, lora, training, "
                f"...); this file is {got}", "Start from examples/quickstart.yaml.", file=where, line=1, column=1)
        return out.result(time.perf_counter() - start), None, located.data, None
    kind = kind or importers.detect_kind(located.data)
    mapped = importers.import_config(kind, located, where, path.resolve().parent, data, hardware) \
        if kind != "tunegate" else None
    if mapped is None:
        spec = _check_spec(_with_hardware(located, hardware), where, path, out)
    else:  # another tool's config: check the mapped spec, then name the original keys
        out.extend(mapped.findings)
        inner = FindingCollector(STAGE, cap)
        spec = _check_spec(_with_hardware(mapped.located, hardware), where, path, inner)
        out.extend([t for f in inner.kept if (t := importers.translate(f, mapped)) is not None])
    out.kept.sort(key=lambda f: (f.line or 0, f.column or 0))
    stats = {"keys_written": len(located.places), "kind": kind, **_trainers(spec, out, mapped, path)}
    if hardware:
        stats["hardware_from_flags"] = dict(hardware)
    result = out.result(time.perf_counter() - start, stats)
    data = mapped.data if mapped is not None else located.data
    return result, (spec if result.status == "passed" else None), data, mapped


def _with_hardware(located: yaml_loader.Located, hardware: dict[str, Any] | None) -> yaml_loader.Located:
    """`located` with hardware.gpu / hardware.count as `--gpu` / `--gpus` say (their places dropped: a
    finding about them is about the flag, not the line the file wrote); a catalog GPU drops hardware.custom."""
    if not hardware or not isinstance(located.data, dict):
        return located
    section = located.data.get("hardware")
    section = dict(section) if isinstance(section, dict) else {}
    section.update(hardware)
    if "gpu" in hardware:
        section.pop("custom", None)
    gone = {f"hardware.{k}" for k in (*hardware, "custom")}
    places = {k: v for k, v in located.places.items() if k not in gone and not k.startswith("hardware.custom.")}
    return dataclasses.replace(located, data={**located.data, "hardware": section}, places=places)


def _trainers(spec: Spec | None, out: FindingCollector, mapped: Any, path: Path) -> dict[str, Any]:
    """The stats the report's two verdicts and its requirements are read from: the config's own trainer,
    what tunegate launch cannot run (TG160, and an import's TG144 and TG147), what the run machine needs.

    An import's TG144 and TG147 errors (another objective than supervised fine-tuning, an adapter other
    than LoRA) say what tunegate does not gate, which the tool runs: tunegate's run's only
    (`launch_only`). Where the tool trains plain text records (`trains_text`), the dataset stage's TG271
    on them is too."""
    refusing = {trainer_support.CANNOT_SHARD, *(mapped.refusal_codes if mapped is not None else ())}
    stats: dict[str, Any] = {
        "trainer": (mapped.runs_with or importers.dialect(mapped.kind).runs_with) if mapped is not None else LAUNCH,
        "tunegate_launch": [f"{f.place()} {f.code} {f.message}" for f in out.kept if f.code in refusing]}
    if mapped is not None:
        stats["launch_only"] = sorted(mapped.refusal_codes)
        if mapped.trains_text:
            stats["trains_text"] = dict(mapped.trains_text)
        if mapped.memory_savers:
            stats["memory_savers"] = list(mapped.memory_savers)
    if spec is not None:
        needs = run_machine.requirements(spec.resolve_paths(path.resolve().parent), path.resolve().parent)
        stats["requirements"] = [_in_config_words(r, mapped) for r in needs]
    return stats


def _in_config_words(need: dict[str, Any], mapped: Any) -> dict[str, Any]:
    """A requirement's key and reason in the imported config's own keys."""
    if mapped is None:
        return need
    return {**need, "key": importers.original_key(need["key"], mapped),
            "reason": importers.translate_words(need["reason"], mapped)}


def _check_spec(located: yaml_loader.Located, where: str, path: Path, out: FindingCollector) -> Spec | None:
    """Validate the mapping, then the cross-field rules; every problem into `out`."""
    spec, bad = _validate(located.data)
    for err in bad:
        if not _under(err["loc"], located.refused):  # a refused value already has its finding
            add_validation_error(out, err, located, where)
    if spec is None and bad:
        # Report the cross-field rules too: validate again with the broken keys left at their
        # defaults, and keep only rule findings about keys that were not themselves broken.
        spec, _ = _validate(_without(located.data, [e["loc"] for e in bad]))
    broken = {".".join(map(str, e["loc"])) for e in bad}
    if spec is not None:
        spec = spec.resolve_paths(path.resolve().parent)
        out.extend([f for f in check_rules(spec, located, where, path.resolve().parent) if f.key not in broken])
        errors = {(f.code, f.key) for f in out.kept if f.severity == "error"}
        out.extend(sweep_findings(spec, located, where, path, errors, check_mapping))  # TG170-TG179: the sweep's candidates
    return spec


def check_mapping(located: yaml_loader.Located, where: str, path: Path, out: FindingCollector) -> Spec | None:
    """The spec stage of a mapping that is not a file of its own (a sweep candidate); findings into `out`."""
    return _check_spec(located, where, path, out)


_YAML_HINTS = {
    yaml_loader.NOT_YAML: "Fix the YAML syntax at this place (indentation, an unclosed bracket or quote).",
    yaml_loader.TOO_DEEP: f"No spec nests that deep (a sweep override is 5 levels); flatten it to at most "
             f"{yaml_loader.MAX_DEPTH} levels and check that no alias (*name) sits inside its own anchor.",
    yaml_loader.TOO_MANY_VALUES: f"Write the values out, or use fewer aliases: a spec may expand to at most "
             f"{yaml_loader.MAX_NODES:,} values. A few lines of nested aliases can stand for billions.",
}


def _under(loc: tuple[Any, ...], refused: list[yaml_loader.TagProblem]) -> bool:
    key = ".".join(map(str, loc))
    return any(p.key == key or key.startswith(p.key + ".") or not p.key for p in refused)


def _validate(data: dict[str, Any]) -> tuple[Spec | None, list[dict[str, Any]]]:
    try:
        return Spec.model_validate(data), []
    except ValidationError as exc:
        return None, exc.errors()


def _without(data: dict[str, Any], locs: list[tuple[Any, ...]]) -> dict[str, Any]:
    """A deep copy of `data` with the values at `locs` removed (so defaults apply)."""
    import copy

    pruned = copy.deepcopy(data)
    for loc in locs:
        node: Any = pruned
        for part in loc[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(loc[-1], None)
    return pruned


def load_spec(path: str | Path) -> Spec:
    """Load a spec that must be valid (for commands past the gate); raise UsageError listing the problems."""
    return parse_spec(path).require()


def _read_bytes(path: Path) -> bytes:
    """The spec's bytes, at most one past MAX_SPEC_BYTES; UsageError for what is not a regular file."""
    if not os.path.lexists(path):
        raise UsageError(f"spec file not found: {shown(path)}")
    try:
        return read_regular(path, MAX_SPEC_BYTES + 1)
    except UsageError as exc:
        raise UsageError(f"cannot read the spec: {exc}") from None


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")  # as utf-8-sig, without loading that codec
    except UnicodeDecodeError as exc:
        raise UsageError(f"spec {shown(path)} is not UTF-8 text (bad byte at offset {exc.start})") from None
