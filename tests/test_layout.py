"""The layout holds: no import circle, no import that runs back up, every module in a wing.

Read from the source with `ast`, every import counted, including those inside functions (a lazy
import that runs back up is still a dependency the wrong way).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tunegate import stages

PACKAGE = ROOT / "tunegate"
# Lower ranks are imported by higher ones, never the other way. Wings of the same rank do not
# import each other. The kernel files are leaves; gate.py runs the stages; cli sits on top.
RANKS = {
    "errors": -0.5,  # every exception tunegate raises on purpose; imports nothing of ours, so any wing may raise one
    "progress": 0, "processes": 0, "pathguard": 0.5,
    "user_cache": 0.5,  # the folder of what tunegate builds once and keeps ($TUNEGATE_CACHE); imports only errors
    "front_door": -1,  # a wing package's names loaded on first use (PEP 562); imports nothing of ours
    "destination": 0.55,  # where a command writes a file (never over an input); imports only errors and pathguard
    "file_kinds": 0.7,  # which container a data file is (by magic bytes, else name); imports only pathguard
    "local_api": 0.6,  # the Prefect API child a flow command starts (imports only processes and errors)
    "stages": 0.8,  # the table of the gate's stages: read by the report, the gate, tasks and sweep; imports nothing
    "plain_record": 0.9,  # the report's dataclasses' dump, copy and validate (pydantic only to read back)
    "facts": 1, "report": 2, "render": 3, "spec": 3, "charts": 3.5,
    "stage": 4,
    "native": 4.2,  # compiled hot loops (C), used by dataset and overlap; they import nothing of ours
    "formats": 2.5,  # dataset formats (imports only report): below the spec, whose data.format lists them
    "dataset": 5, "tracking": 5,
    "overlap": 6, "estimate": 6, "training": 6,
    "minirun": 7, "advisor": 7,
    "gate": 8, "": 8.5,  # "": the package's own __init__ (`from tunegate import check`)
    "output": 8.7, "events": 8.7,  # events: the Prefect events tunegate emits, the review form
    "pruning": 8.8,  # a sweep's pruning rules and the board its candidates report to (the trainer reads them)
    "fullrun": 9, "sweep": 10, "tasks": 11, "flows": 12, "cli": 13, "__main__": 14,
}
KERNEL = {"errors", "front_door", "pathguard", "destination", "file_kinds", "stages", "plain_record", "facts", "report",
          "render", "stage", "gate", "user_cache"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
# Compiled modules (tunegate/native/_loops.c, the file with the module's init): leaves, they import
# no tunegate module.
EXTENSIONS = {module_name(p) for p in PACKAGE.rglob("*.c") if "PyMODINIT_FUNC" in p.read_text()}


def wing(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def resolve(target: str) -> str | None:
    """The tunegate module an import names (a submodule if it is one, else its package)."""
    while target and target not in MODULES and target not in EXTENSIONS:
        target = target.rpartition(".")[0]
    return target or None


def imports_of(module: str) -> set[str]:
    """Every tunegate module this one imports, also by name for importlib (the gate's front doors)."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                and node.value in MODULES:
            found.add(node.value)
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from tunegate.fullrun import args` imports the submodule; `from tunegate.spec import Spec`
            # imports the package's front door.
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES.keys() | EXTENSIONS
                     else node.module for a in node.names]
        else:
            continue
        for name in names:
            if name == "tunegate" or name.startswith("tunegate."):
                target = resolve(name)
                if target is not None and target != module:
                    found.add(target)
    return found


GRAPH = {**{m: imports_of(m) for m in MODULES}, **{e: set() for e in EXTENSIONS}}
# The gate imports each stage's front door by the name the stage table gives it (importlib).
GRAPH["tunegate.gate"] |= {stages.front_door(name) for name in stages.names()}


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def is_package_init(module: str, target: str) -> bool:
    """A package's front door importing its own submodules is the wing's way in, not a circle."""
    return MODULES[module].name == "__init__.py" and target.startswith(module + ".")


def test_no_module_imports_itself_back_round_a_circle():
    circles = [c for c in cycles()
               if not all(is_package_init(a, b) or is_package_init(b, a) for a in c for b in c if a != b)]
    assert circles == []


def test_no_import_runs_back_up_the_layers():
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                    if wing(m) != wing(t) and RANKS[wing(t)] >= RANKS[wing(m)])
    assert upward == []


def test_every_module_is_a_kernel_file_or_inside_a_wing():
    flat = sorted(m for m, path in MODULES.items()
                  if m.count(".") == 1 and path.name != "__init__.py" and wing(m) not in KERNEL | {"__main__"})
    assert flat == []
    assert {wing(m) for m in MODULES} <= set(RANKS)


@pytest.mark.parametrize("folder", sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()))
def test_every_stage_wing_has_one_front_door_with_run_stage(folder):
    # The stage table names each stage's folder and front door (the spec's is check.parse_spec: it
    # is read before there is a context to run in).
    rows = [s for s in stages.STAGES if s.folder == folder]
    if not rows:
        assert not (PACKAGE / folder / "stage.py").exists(), f"{folder} is not a gate stage, so it has no stage.py"
        return
    (row,) = rows
    door = PACKAGE / folder / f"{row.door}.py"
    functions = {n.name for n in ast.parse(door.read_text()).body if isinstance(n, ast.FunctionDef)}
    assert row.entry in functions


def test_the_tests_mirror_the_wings():
    wings = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    tests = {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").is_file()}
    assert wings <= tests


def test_only_the_cli_reaches_the_flows():
    # A flow may run another as its subflow (the sweep's launch-best runs preflight and full-run).
    reaching = sorted({wing(m) for m, targets in GRAPH.items() for t in targets
                       if wing(t) == "flows" and wing(m) != "flows"})
    assert reaching in ([], ["cli"])


def test_every_exception_class_is_defined_in_errors_py():
    """One tree (drawn in errors.py's docstring), each class with its exit code."""
    import tunegate.errors as errors

    outside = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and module != "tunegate.errors":
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if any(b.endswith(("Error", "Exception", "Failure")) for b in bases):
                    outside.append(f"{module}.{node.name}")
    assert outside == []
    for name in dir(errors):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.TunegateError):
            assert cls.exit_code in (1, 2, 3) and name in errors.__doc__


def modules_writing_each_code() -> dict[str, set[str]]:
    """Every string that is exactly a finding code (TG101 ... TG7xx), by the modules that write it."""
    found: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"TG\d{3}", node.value):
                found.setdefault(node.value, set()).add(module)
    return found


def test_every_finding_code_is_written_in_one_module():
    """A code two modules need is one function or one named constant of the module that owns it, so
    its message and hint change in one place and a new check has one obvious home."""
    written = modules_writing_each_code()
    assert len(written) > 150, "the scan found too few codes: it is broken"
    assert {code: sorted(modules) for code, modules in written.items() if len(modules) > 1} == {}
