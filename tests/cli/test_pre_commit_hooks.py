"""The shipped pre-commit hooks (.pre-commit-hooks.yaml) claim dataset files and leave configuration alone.

pre-commit runs a hook's `entry` with the staged files whose path `re.search`es its `files`
pattern; these tests apply the manifest the same way to real paths and run the entry.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest
import yaml

from tests.support.paths import DATA, ROOT

HOOKS = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
GOOD = sorted((DATA / "formats" / "good").iterdir())


def claimed_by(path: str) -> list[str]:
    return [name for name, hook in HOOKS.items() if re.search(hook["files"], path)]


@pytest.mark.parametrize("path", ["data/train.jsonl", "val.jsonl.gz", "data/alpaca.json",
                                  "corpus/datasets/support/v2/train.json", "dataset/sharegpt.json",
                                  "data/alpaca.csv", "datasets/v2/train.csv.gz"])
def test_the_lint_hook_claims_jsonl_anywhere_and_json_or_csv_in_a_data_folder(path):
    assert claimed_by(path) == ["tunegate-lint"]


@pytest.mark.parametrize("path", ["package.json", "tsconfig.json", ".vscode/settings.json", "src/config.json",
                                  "metadata/schema.json", "notes.jsonl.bak", "results/eval_scores.csv"])
def test_configuration_json_is_claimed_by_no_hook(path):
    assert claimed_by(path) == []


def test_parquet_is_claimed_by_the_hook_that_installs_pyarrow():
    assert claimed_by("data/train.parquet") == ["tunegate-lint-parquet"]
    assert any(dep.startswith("pyarrow") for dep in HOOKS["tunegate-lint-parquet"]["additional_dependencies"])
    assert "additional_dependencies" not in HOOKS["tunegate-lint"]  # the JSONL hook's install stays light


def test_every_good_dataset_is_claimed_once_and_passes_its_hook():
    for path in GOOD:
        relative = str(path.relative_to(ROOT))
        (hook,) = claimed_by(relative)
        run = subprocess.run([sys.executable, "-m", "tunegate", *shlex.split(HOOKS[hook]["entry"])[1:], relative],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"{hook} on {relative}: {run.stdout}{run.stderr}"


def test_a_broken_json_array_in_a_data_folder_fails_the_hook():
    relative = "tests/data/formats/bad/alpaca_missing_comma.json"
    (hook,) = claimed_by(relative)
    run = subprocess.run([sys.executable, "-m", "tunegate", *shlex.split(HOOKS[hook]["entry"])[1:], relative],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and f"{relative}:7:3 TG220" in run.stdout
