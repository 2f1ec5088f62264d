"""Each mini-run, advisor and full-run finding code (TG5xx, TG6xx, TG7xx) is written in one module.

A code two modules need is one function, or one named constant, of the module that owns it: its
message and hint then change in one place, and a new check has one obvious home.
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.support.paths import ROOT

CODE = re.compile(r"TG[567]\d\d")


def modules_writing_each_code() -> dict[str, set[str]]:
    """Every string constant that is exactly a TG5xx-TG7xx code, by the modules that write it."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "tunegate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value):
                found[node.value].add(str(Path(path).relative_to(ROOT)))
    return found


def test_the_scan_finds_the_codes_it_looks_for():
    found = modules_writing_each_code()
    assert found["TG503"] and found["TG601"] and found["TG705"]


def test_every_mini_run_advisor_and_full_run_code_is_written_in_one_module():
    shared = {code: sorted(modules) for code, modules in modules_writing_each_code().items() if len(modules) > 1}
    assert shared == {}
