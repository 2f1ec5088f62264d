"""One fuzz input through each reader, and what counts as a failure (an internal error).

The spec loader (`parse_spec`) may refuse a file with a UsageError (not UTF-8, ...) and otherwise
returns a stage result of TG1xx findings; the strict reader (the dataset stage) never raises; the
lenient reader (`iter_records`, `fingerprint_file`) raises nothing but tunegate's own errors
(UnreadableRecord, DecompressionBomb, UsageError). The same holds for a number under any spec key
(`number_input`), an axolotl or TRL config in any dialect (`config_input`) and a data file of any
name (`path_input`). Anything else is a bug of ours.
"""
from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import DATA, EXAMPLES
from tunegate.errors import TunegateError

SPEC_SEEDS = [p.read_bytes() for p in sorted([*EXAMPLES.glob("*.yaml"), *(DATA / "spec").glob("*.yaml")])]
# axolotl and TRL configs the import maps (tunegate.spec.importers): the mapping reads raw values itself.
CONFIG_SEEDS = [p.read_bytes() for p in sorted([*(DATA / "configs" / "axolotl").glob("*.yml"),
                                                *(DATA / "configs" / "trl").glob("*.yaml"),
                                                *(DATA / "configs" / "llamafactory" / "examples").glob("*/*.yaml")])]
JSONL_SEEDS = [p.read_bytes() for p in sorted((DATA / "dataset" / "good").glob("*.jsonl"))
               if p.stat().st_size < 4000]


def spec_input(data: bytes, folder: Path) -> None:
    """Raise AssertionError unless the spec stage answers `data` with findings or a usage error."""
    from tunegate.spec.check import parse_spec

    path = folder / "fuzz.yaml"
    path.write_bytes(data)
    try:
        parsed = parse_spec(path)
    except TunegateError:
        return
    result = parsed.result
    assert result.status in ("passed", "failed") and parsed.valid == (result.status == "passed")
    for f in result.findings:
        assert re.fullmatch(r"TG1\d\d", f.code) and f.message, f
        assert f.line is None or f.line >= 1, f


def strict_input(data: bytes, folder: Path, name: str = "fuzz.jsonl") -> None:
    """Raise AssertionError unless the dataset stage answers `data` with well-placed TG2xx findings."""
    from tunegate.dataset import validate_dataset

    path = folder / name
    path.write_bytes(data)
    result = validate_dataset({"train": path}, cap=5)
    assert result.status in ("passed", "failed")
    for f in result.findings:
        assert re.fullmatch(r"TG2\d\d", f.code) and f.message, f
        if f.code != "TG240":  # a file that cannot be opened has no line
            assert f.line is not None and f.line >= 1 and f.column is not None and f.column >= 1, f
    assert result.status == "failed" or not any(f.severity == "error" for f in result.findings)


def lenient_input(data: bytes, folder: Path, name: str = "fuzz.jsonl") -> None:
    """Raise AssertionError if the lenient reader raises anything but tunegate's own errors."""
    from tunegate.dataset.fingerprint import fingerprint_file
    from tunegate.dataset.records import iter_chats, iter_records

    path = folder / name
    path.write_bytes(data)
    for read in (lambda: list(iter_records(path)), lambda: list(iter_records(path, strict=True)),
                 lambda: list(iter_chats(path)), lambda: fingerprint_file(path)):
        try:
            read()
        except TunegateError:
            pass


_FLOWS_TRAIN = (DATA / "flows" / "train.jsonl").read_bytes()
_FLOWS_VALIDATION = (DATA / "flows" / "validation.jsonl").read_bytes()


def numeric_keys() -> list[str]:
    """Every dotted key of the spec that holds a number (read from the model, so a new field is fuzzed too)."""
    from pydantic import BaseModel

    from tunegate.spec.model import Spec

    def base(ann: Any) -> list[Any]:
        if typing.get_origin(ann) is typing.Annotated:
            return base(typing.get_args(ann)[0])
        args = typing.get_args(ann)
        return [b for a in args for b in base(a)] if args else [ann]

    def walk(model: type[BaseModel], prefix: str) -> list[str]:
        keys = []
        for name, field in model.model_fields.items():
            kinds = base(field.annotation)
            section = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
            if section is not None:
                keys += walk(section, f"{prefix}{name}.")
            elif any(k in (int, float) for k in kinds):
                keys.append(prefix + name)
        return keys

    return walk(Spec, "")


def key_range(key: str) -> tuple[float, float, bool]:
    """(lowest, highest, whole numbers?) a spec accepts at the dotted numeric `key`, from the model's bounds."""
    from pydantic import BaseModel

    from tunegate.spec.model import Spec

    model: Any = Spec
    *sections, name = key.split(".")
    for section in sections:
        model = next(k for k in _kinds(model.model_fields[section].annotation)
                     if isinstance(k, type) and issubclass(k, BaseModel))
    field = model.model_fields[name]
    found = [*field.metadata, *_constraints(field.annotation)]
    lows = [v for c in found for v in (getattr(c, "ge", None), getattr(c, "gt", None)) if v is not None]
    highs = [v for c in found for v in (getattr(c, "le", None), getattr(c, "lt", None)) if v is not None]
    return float(max(lows, default=0)), float(min(highs, default=1e6)), int in _kinds(field.annotation)


def _kinds(ann: Any) -> list[Any]:
    if typing.get_origin(ann) is typing.Annotated:
        return _kinds(typing.get_args(ann)[0])
    args = typing.get_args(ann)
    return [k for a in args for k in _kinds(a)] if args else [ann]


def _constraints(ann: Any) -> list[Any]:
    """The constraint objects (Gt, Le, ...) inside an Annotated type, an Optional one included."""
    if typing.get_origin(ann) is typing.Annotated:
        inner = typing.get_args(ann)[1:]
        return [m for info in inner for m in getattr(info, "metadata", [])] + _constraints(typing.get_args(ann)[0])
    return [c for a in typing.get_args(ann) for c in _constraints(a)]


def number_input(values: dict[str, Any], folder: Path) -> None:
    """The spec stage answers numbers under any keys ({dotted key: value}) with findings (never an exception
    of Python's own), and a spec it accepts goes through the static gate and the advisor's rules (the
    stages that compute with them)."""
    from tunegate.gate import check
    from tunegate.spec.check import parse_spec

    spec_input(number_spec(values), folder)
    parsed = parse_spec(folder / "fuzz.yaml")
    if parsed.valid:
        (folder / "t.jsonl").write_bytes(_FLOWS_TRAIN)  # data that passes, so the estimate and advisor run
        (folder / "v.jsonl").write_bytes(_FLOWS_VALIDATION)
        try:
            check(parsed, advisor=True)
        except TunegateError:
            pass


def number_spec(values: dict[str, Any]) -> bytes:
    """The flows' good spec with each value at its dotted key, as YAML bytes (a custom GPU for hardware.custom)."""
    data = yaml.safe_load((DATA / "flows" / "good.yaml").read_text())
    data["data"] = {"train": "t.jsonl", "validation": "v.jsonl"}
    data["advisor"] = {"api_key_env": "TUNEGATE_FUZZ_NO_SUCH_KEY"}  # the rules only: no network
    if any(key.startswith("hardware.custom.") for key in values):
        data["hardware"] = {"gpu": "mine", "custom": {"memory_gib": 80, "fp32_tflops": 20, "bandwidth_gbs": 2000}}
    if any(key.startswith("sweep.space.") for key in values):
        data["sweep"] = {"strategy": "nomad", "space": {}}
    for key, value in values.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[last] = value
    return yaml.safe_dump(data, width=1 << 20).encode()


def config_input(data: bytes, folder: Path, kind: str | None = None, name: str = "fuzz.yml") -> None:
    """Raise AssertionError unless an axolotl or TRL config is answered with TG1xx findings or a usage error,
    and the static gate runs on what it maps to."""
    from tunegate.gate import check
    from tunegate.spec.check import parse_spec

    path = folder / name
    path.write_bytes(data)
    try:
        parsed = parse_spec(path, kind=kind)
    except TunegateError:
        return
    for f in parsed.result.findings:
        assert re.fullmatch(r"TG1\d\d", f.code) and f.message, f
    if parsed.valid:
        try:
            check(parsed)
        except TunegateError:
            pass


def path_input(name: str, folder: Path) -> None:
    """A data file of any name (a NUL, 300 bytes, a glob, escapes, /proc/kmsg...), alone or as one file of a
    split given as a list: the spec stage, the dataset stage and the lenient reader answer with findings or
    tunegate's own errors, never hang."""
    from tunegate.dataset import validate_dataset
    from tunegate.dataset.fingerprint import fingerprint_file
    from tunegate.gate import check
    from tunegate.spec.check import parse_spec

    made = _data_file(folder, name)
    (folder / "v.jsonl").write_bytes(JSONL_SEEDS[0])
    for train in (name, ["v.jsonl", name]):  # alone, and as the second file of a split given as a list
        text = yaml.safe_dump({"data": {"train": train, "validation": "v.jsonl"}}, allow_unicode=True, width=1 << 20)
        (folder / "paths.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            check(parse_spec(folder / "paths.yaml"))
        except TunegateError:
            pass
    target = made or Path(name)
    for read in (lambda: validate_dataset({"train": target}, cap=5), lambda: fingerprint_file(target)):
        try:
            read()
        except TunegateError:
            pass


def _data_file(folder: Path, name: str) -> Path | None:
    """`name` made as a data file under `folder` when the file system takes it, else None."""
    if name.startswith("/") or "\0" in name or ".." in Path(name).parts:  # only ever inside `folder`
        return None
    try:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(JSONL_SEEDS[0])
        return path
    except (OSError, ValueError):
        return None
