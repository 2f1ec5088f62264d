"""Each spec finding code (TG1xx) is written in one module: the one that produces it.

A code two modules need is one function they both call (the importers' `no_validation`,
`not_honoured`, ...), or a named constant that a module testing for the code imports from the
module that produces it (`schema_errors.MISSING_KEY`, `yaml_loader.NOT_YAML`).
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict

from tests.support.paths import ROOT


def modules_writing_each_code(pattern: str) -> dict[str, set[str]]:
    """code -> the modules of tunegate/ where it is written as a string of its own."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in (ROOT / "tunegate").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(pattern, node.value):
                found[node.value].add(str(path.relative_to(ROOT)))
    return found


def test_every_spec_code_is_written_in_one_module():
    written = modules_writing_each_code(r"TG1\d\d")
    assert {code: sorted(modules) for code, modules in written.items() if len(modules) > 1} == {}

