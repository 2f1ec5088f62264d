"""The tools' own defaults and accepted values: from the installed tool's config classes, else the copied tables.

    tool_default("trl", "learning_rate", 2e-5)      # SFTConfig's default where TRL is installed, else 2e-5
    accepted_optimizers("axolotl")                  # transformers' OptimizerNames + axolotl's own optimizers

A config leaves most keys out, and the tool fills them with its defaults; tunegate must fill them
with the same ones. Where the tool is installed (axolotl on the GPU box, TRL beside it), its config
classes are the truth: their source files are read (never imported: axolotl and TRL pull in torch,
and the spec stage imports none of it) and each field's literal default taken. Where it is not,
the dialect's copied table stands, each labelled with the version it was copied from
(`COPIED_FROM`), and tests/spec/importers/test_tool_defaults.py pins the tables to that version.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

# Where each tool keeps the config classes a config's keys are fields of, in the order they override
# one another (TRL's SFTConfig over transformers' TrainingArguments).
SOURCES: dict[str, tuple[tuple[str, str], ...]] = {
    "axolotl": (("axolotl", "utils/schemas/training.py"), ("axolotl", "utils/schemas/peft.py"),
                ("axolotl", "utils/schemas/config.py")),
    "trl": (("transformers", "training_args.py"), ("trl", "trainer/base_config.py"),
            ("trl", "trainer/sft_config.py"), ("trl", "trainer/model_config.py"), ("trl", "scripts/utils.py")),
}
# The versions the copied tables and lists were read from (their sources at that version).
COPIED_FROM = {
    "axolotl": "axolotl 0.18.0 (axolotl-ai-cloud/axolotl 067b021c8b87a9e5e380b9173c704cf7340e30f5, "
               "src/axolotl/utils/schemas)",
    "trl": "TRL 1.10.0.dev0 (huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8, SFTConfig, ModelConfig, "
           "ScriptArguments) over transformers 5.x TrainingArguments",
}
# axolotl's optimizers beyond transformers' (src/axolotl/utils/schemas/enums.py, CustomSupportedOptimizers)
AXOLOTL_OPTIMIZERS = frozenset({
    "optimi_adamw", "ao_adamw_4bit", "ao_adamw_8bit", "ao_adamw_fp8", "adopt_adamw", "came_pytorch", "muon", "dion",
    "sinkgd", "flash_adamw", "flash_adam", "flash_sgd", "flash_sgdw", "flash_lion", "q_galore_adamw8bit"})
_MISSING = object()


def tool_default(tool: str, key: str, copied: Any) -> Any:
    """The tool's default for `key`: its installed config classes' where they give a literal, else `copied`."""
    return installed_defaults(tool).get(key, copied)


@lru_cache(maxsize=None)
def installed_defaults(tool: str) -> dict[str, Any]:
    """Every literal field default of the installed tool's config classes ({} where it is not installed)."""
    found: dict[str, Any] = {}
    if tool in SOURCES and _package_folder(SOURCES[tool][-1][0]) is None:
        return found  # the tool itself is not installed: its table stands (not transformers' alone)
    for package, relative in SOURCES.get(tool, ()):
        folder = _package_folder(package)
        if folder is not None and (folder / relative).is_file():
            found.update(literal_defaults(folder / relative))
    return found


def source(tool: str) -> str:
    """Where the defaults come from, as a finding or a doc says it."""
    return "the installed tool's config classes" if installed_defaults(tool) else COPIED_FROM.get(tool, tool)


@lru_cache(maxsize=None)
def accepted_optimizers(tool: str) -> frozenset[str] | None:
    """The optimizer names the tool accepts: transformers' OptimizerNames (read from the installed
    transformers, which both tools pass `optim` to), with axolotl's own; None where transformers is
    not installed here (then no name is refused for being unknown)."""
    folder = _package_folder("transformers")
    path = folder / "training_args.py" if folder is not None else None
    names = _enum_values(path, "OptimizerNames") if path is not None and path.is_file() else frozenset()
    if not names:
        return None
    if tool != "axolotl":
        return names
    axolotl = _package_folder("axolotl")
    own = _enum_values(axolotl / "utils/schemas/enums.py", "CustomSupportedOptimizers") if axolotl else frozenset()
    return names | (own or AXOLOTL_OPTIMIZERS)


def literal_defaults(path: Path) -> dict[str, Any]:
    """`name: type = default` (or `= field(default=...)` / `Field(default=...)`) of every class in a source
    file, where the default is a literal; later classes override earlier ones."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, Any] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                value = _default_of(stmt.value)
                if value is not _MISSING:
                    found[stmt.target.id] = value
    return found


def _default_of(node: ast.expr) -> Any:
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("field", "Field"):
        given = next((kw.value for kw in node.keywords if kw.arg == "default"), node.args[0] if node.args else None)
        return _MISSING if given is None else _literal(given)
    return _literal(node)


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _enum_values(path: Path, name: str) -> frozenset[str]:
    """The string values of the enum class `name` in a source file (`MEMBER = "value"` lines of its body).

    Scanned, not parsed: transformers' training_args.py is ~3,000 lines, and `ast.parse` of it would cost
    every check of an imported config ~0.2 s; the enum's members are plain assignment lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return frozenset()
    start = text.find(f"\nclass {name}(")
    if start < 0:
        return frozenset()
    body = text[start + 1:]
    end = _NEXT_TOP_LEVEL.search(body, 1)
    return frozenset(_MEMBER.findall(body[:end.start() if end else len(body)]))


_NEXT_TOP_LEVEL = re.compile(r"^\S", re.M)
_MEMBER = re.compile(r"^\s+[A-Za-z_]\w*\s*=\s*[\"']([^\"'\n]+)[\"']\s*(?:#.*)?$", re.M)


def _package_folder(package: str) -> Path | None:
    """An installed package's folder, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None
