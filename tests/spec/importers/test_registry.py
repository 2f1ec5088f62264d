"""A config dialect is one module plus its row in the registry: nothing else names it.

The toy dialect (tests/data/configs/toy/toy_dialect.py) is copied into a copy of the package with
its row added to `registry.DIALECTS`, and `tunegate check` runs there as a user runs it: its
configs are detected by its markers, offered by `--from`, mapped, and the spec stage's findings
come back at the toy config's own keys and lines, in its own words.
"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.spec import importers
from tunegate.spec.importers import registry

TOY = DATA / "configs" / "toy"


@pytest.fixture(scope="module")
def install_with_toy(tmp_path_factory) -> Path:
    """A copy of the package with the toy dialect's module and its registry row, and nothing else changed."""
    copy = tmp_path_factory.mktemp("install")
    shutil.copytree(ROOT / "tunegate", copy / "tunegate", ignore=shutil.ignore_patterns("__pycache__"))
    folder = copy / "tunegate" / "spec" / "importers"
    shutil.copy(TOY / "toy_dialect.py", folder / "toy_dialect.py")
    rows = folder / "registry.py"
    text = rows.read_text(encoding="utf-8")
    row = '    "toy": "tunegate.spec.importers.toy_dialect",\n'
    rows.write_text(text.replace("DIALECTS = {\n", "DIALECTS = {\n" + row, 1), encoding="utf-8")
    assert rows.read_text(encoding="utf-8") != text
    return copy


def tunegate(install: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(install)}
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=install, env=env, capture_output=True,
                          text=True, timeout=120)


def spec_stage(run: subprocess.CompletedProcess) -> tuple[dict, list[tuple]]:
    report = json.loads(run.stdout)
    stage = next(s for s in report["stages"] if s["name"] == "spec")
    return stage["stats"], [(f["code"], f["key"], f["line"]) for f in report["findings"]]


def test_a_registered_dialects_config_is_detected_by_its_markers(install_with_toy):
    stats, _ = spec_stage(tunegate(install_with_toy, "check", str(TOY / "toy.yml"), "--json"))
    assert stats["kind"] == "toy"


def test_a_registered_dialect_is_offered_by_from(install_with_toy):
    assert "--from {tunegate,toy,axolotl,trl,llamafactory}" in tunegate(install_with_toy, "check", "--help").stdout
    assert "{tunegate,toy,axolotl,trl,llamafactory}" in tunegate(install_with_toy, "samples", "--help").stdout
    stats, _ = spec_stage(tunegate(install_with_toy, "check", str(TOY / "toy.yml"), "--from", "toy", "--json"))
    assert stats["kind"] == "toy"


def test_a_registered_dialects_findings_are_at_its_own_keys_in_its_own_words(install_with_toy):
    run = tunegate(install_with_toy, "check", str(TOY / "toy.yml"), "--json")
    assert run.returncode == 1
    _, found = spec_stage(run)
    assert found == [("TG140", None, None), ("TG103", "toy_rank", 3)]
    findings = {f["code"]: f for f in json.loads(run.stdout)["findings"]}
    assert findings["TG103"]["message"].startswith("toy_rank: ")
    assert findings["TG103"]["hint"].startswith("Give toy_rank a whole number of at least 1")  # its fixes table
    assert findings["TG140"]["message"] == "not checked: 1 toy key(s) tunegate does not model: toy_warmup"
    assert "see docs/toy.md" in findings["TG140"]["hint"]


def test_the_package_as_shipped_offers_only_its_own_dialects():
    assert importers.KINDS == ("tunegate", *registry.DIALECTS) == ("tunegate", "axolotl", "trl", "llamafactory")


@pytest.mark.parametrize("name", sorted(registry.DIALECTS))
def test_each_row_names_a_module_that_declares_that_dialect(name):
    declared = importlib.import_module(registry.DIALECTS[name]).DIALECT
    assert declared.name == name and declared.markers and (ROOT / declared.docs).is_file()


def test_marker_keys_of_two_dialects_never_overlap():
    markers = [registry.dialect(name).markers for name in registry.DIALECTS]
    assert all(not (a & b) for i, a in enumerate(markers) for b in markers[i + 1:])
