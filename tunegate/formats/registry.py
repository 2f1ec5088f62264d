"""The dataset formats there are, found in this package, and which one a record is in.

    FORMATS                                    # ("messages", "sharegpt", "alpaca", "prompt_completion")
    CHOICES                                    # ("auto", *FORMATS): data.format's and the CLI's choices
    detect({"conversations": [...]})          # "sharegpt"
    FileFormat("auto").of(record)              # the file's format, fixed by its first record

A format is one module of this package that declares `FORMAT = FormatInfo(...)`
(`tunegate.formats.format_info`); the package's modules are listed once, at import (pkgutil:
one directory listing), and each imported. Everything that names formats reads them from here:
detection, the spec's `data.format`, the CLI's choices, the contract and docs/formats.md's table.
A format module (and what it imports) must not import this module: it is imported while this
module is still being set up.

A file holds one format: in `auto` mode the first record whose format is known fixes it, and a
later record in another format is an error at its line (TG260), never silently read another way.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from tunegate.formats.format_info import FormatInfo

AUTO = "auto"  # data.format's default: each file's first record decides


def discover(package: str, folder: Path) -> list[ModuleType]:
    """The modules of `package` (in `folder`) that declare a FORMAT."""
    found = []
    for entry in pkgutil.iter_modules([str(folder)]):
        if not entry.ispkg:
            module = importlib.import_module(f"{package}.{entry.name}")
            if isinstance(getattr(module, "FORMAT", None), FormatInfo):
                found.append(module)
    return found


def build(modules: Iterable[ModuleType]) -> dict[str, ModuleType]:
    """The format modules by name, in their declared order; raises on a module that declares
    itself wrongly (a bug in that module, so it fails every command at once, not one record)."""
    table: dict[str, ModuleType] = {}
    for module in sorted(modules, key=lambda m: (m.FORMAT.order, m.FORMAT.name)):
        info = module.FORMAT
        where = f"{module.__name__}.FORMAT"
        missing = [f for f in ("problems", "to_messages") if not callable(getattr(module, f, None))]
        if missing:
            raise TypeError(f"{module.__name__} declares a FORMAT but has no {' or '.join(missing)}(record)")
        if info.name == AUTO or not info.name.isidentifier():
            raise ValueError(f"{where}.name {info.name!r} is not a usable format name")
        if info.name in table:
            raise ValueError(f"{where}.name {info.name!r} is declared by {table[info.name].__name__} too")
        if not info.keys or not all(type(k) is str for k in info.keys):
            raise ValueError(f"{where}.keys must name the keys that say a record is in it")
        table[info.name] = module
    return table


def signatures(infos: Iterable[FormatInfo]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(name, keys) of every format in the order detection tries them: most specific first."""
    return tuple((i.name, i.keys) for i in sorted(infos, key=lambda i: (i.priority, -len(i.keys), i.name)))


def written_out(order: tuple[tuple[str, tuple[str, ...]], ...]) -> Callable[[dict[str, Any]], str | None]:
    """`detect` for these signatures, written out as one chain of `in` tests and compiled once.

    It runs once per record of every file that is not OpenAI chat: a loop over the signatures
    took 2.5x the time of the hand-written chain (230 vs 90 ns for an Alpaca record, 3-5 % of the
    dataset stage's CPU on a file of short records); this is that chain. Only `build`-checked names
    and keys go in, each written with repr().
    """
    lines = ["def detect(record):"]
    for name, keys in order:
        lines += [f"    if {' and '.join(f'{key!r} in record' for key in keys)}:", f"        return {name!r}"]
    namespace: dict[str, Any] = {}
    exec("\n".join([*lines, "    return None"]), namespace)  # our own declarations (see above), never data
    detect = namespace["detect"]
    detect.__doc__ = "The first format, in detection order, whose every key the record has; None if none."
    return detect


def _hooks(name: str) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """Each format's optional function `name`, for the formats that have one."""
    return {f: getattr(m, name) for f, m in MODULES.items() if callable(getattr(m, name, None))}


MODULES = build(discover(__package__, Path(__file__).parent))
FORMATS: tuple[str, ...] = tuple(MODULES)
INFO: dict[str, FormatInfo] = {name: m.FORMAT for name, m in MODULES.items()}
LABELS: dict[str, str] = {name: i.label for name, i in INFO.items()}
CHOICES: tuple[str, ...] = (AUTO, *FORMATS)
ADDED_KEYS = _hooks("added_keys")
PLAIN_TEXT = _hooks("is_plain_text")
detect = written_out(signatures(INFO.values()))


def shares_keys(record: dict[str, Any], fmt: str) -> bool:
    """Whether the record has some of `fmt`'s keys (an Alpaca record missing its `output`)."""
    return any(k in record for k in INFO[fmt].keys)


class FileFormat:
    """The format of one file: given, or fixed by the first record whose format is known."""

    def __init__(self, declared: str = AUTO):
        self.declared = declared
        self.format: str | None = None if declared == AUTO else declared
        self.first_line: int | None = None

    def of(self, record: dict[str, Any], line: int = 0) -> tuple[str | None, str | None]:
        """(the file's format, the record's own format) once this record has been seen."""
        own = detect(record)
        if self.format is None and own is not None:
            self.format, self.first_line = own, line
        return self.format, own


def described() -> str:
    """The formats as data.format's description names them: "messages (OpenAI chat), sharegpt, ..."."""
    return ", ".join(f"{name} ({i.known_as})" if i.known_as else name for name, i in INFO.items())

