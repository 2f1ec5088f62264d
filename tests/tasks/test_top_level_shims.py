"""The top-level tasks/ the design card lists: one thin shim per tunegate.tasks module that defines tasks.

As flows/ is over tunegate.flows: the tasks live inside the package, the shims only re-export them.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import ROOT

SHIMS = sorted((ROOT / "tasks").glob("*.py"))


def defined_tasks(module: ModuleType) -> list[str]:
    """The names of the Prefect tasks `module` itself defines (not those it imports)."""
    from prefect import Task

    return sorted(name for name, value in vars(module).items()
                  if isinstance(value, Task) and value.fn.__module__ == module.__name__)


def twin(shim: Path) -> ModuleType:
    return importlib.import_module(f"tunegate.tasks.{shim.stem}")


def load(shim: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"top_level_tasks_{shim.stem}", shim)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_tunegate_tasks_module_that_defines_tasks_has_a_shim():
    modules = sorted(p.stem for p in (ROOT / "tunegate" / "tasks").glob("*.py") if p.stem != "__init__")
    with_tasks = [m for m in modules if defined_tasks(importlib.import_module(f"tunegate.tasks.{m}"))]
    assert with_tasks, "no task found: the scan is broken"
    assert [s.stem for s in SHIMS] == with_tasks


@pytest.mark.parametrize("shim", SHIMS, ids=lambda p: p.stem)
def test_a_shim_gives_its_twins_tasks_themselves_and_nothing_else(shim):
    module, original = load(shim), twin(shim)
    assert module.__all__ == defined_tasks(original)
    assert all(getattr(module, name) is getattr(original, name) for name in module.__all__)


@pytest.mark.parametrize("shim", SHIMS, ids=lambda p: p.stem)
def test_a_shim_is_a_docstring_one_import_and_its_names(shim):
    body = ast.parse(shim.read_text(encoding="utf-8")).body
    assert [type(node).__name__ for node in body] == ["Expr", "ImportFrom", "Assign"]
    assert body[1].module == f"tunegate.tasks.{shim.stem}"


@pytest.mark.parametrize("shim", SHIMS, ids=lambda p: p.stem)
def test_no_shim_is_named_after_an_installed_package(shim):
    # A flow file's folder goes on sys.path when Prefect loads it: a shim must not shadow a package.
    assert importlib.util.find_spec(shim.stem) is None
