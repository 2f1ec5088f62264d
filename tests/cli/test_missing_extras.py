"""Every command without each optional extra: a usage error (exit 2) naming the install line, never
"This is a bug in tunegate" (exit 3), and never a verdict (REJECTED, exit 1) on the user's files.

The packages are hidden in a process of their own (tests/support/without_extras.py), as if they had
never been installed; the commands run there one after another.
"""
from __future__ import annotations

import shutil

import pytest

from tests.support.paths import DATA, EXAMPLES
from tests.support.without_extras import walk

PARQUET = DATA / "formats" / "good" / "sharegpt.parquet"
STATIC = [["check", "examples/quickstart.yaml"], ["check", "examples/quickstart.yaml", "--html", "page.html"],
          ["check", "--train", "examples/data/train.jsonl"], ["lint", "examples/data/train.jsonl"],
          ["convert", "examples/data/train.jsonl", "converted.jsonl", "--to", "messages"],
          ["fingerprint", "examples/data/train.jsonl"], ["estimate", "examples/quickstart.yaml"],
          ["advise", "examples/quickstart.yaml", "--no-llm"], ["schema"], ["gpus"]]
# Each optional package, the commands that need it, and the extra the message must name.
NEEDED = {
    "torch": ("train", [["check", "examples/quickstart.yaml", "--mini-run"], ["preflight", "examples/quickstart.yaml"],
                        ["sweep", "examples/sweep.yaml"], ["launch", "examples/quickstart.yaml"]]),
    "transformers": ("train", [["check", "examples/quickstart.yaml", "--mini-run"],
                               ["samples", "examples/quickstart.yaml"], ["preflight", "examples/quickstart.yaml"],
                               ["sweep", "examples/sweep.yaml"], ["launch", "examples/quickstart.yaml"]]),
    "prefect": ("orchestrate", [["preflight", "examples/quickstart.yaml", "--no-mini-run"],
                                ["sweep", "examples/sweep.yaml"], ["launch", "examples/quickstart.yaml"],
                                ["check", "examples/quickstart.yaml", "--emit-event"]]),
    "mlflow": ("orchestrate", [["preflight", "examples/quickstart.yaml", "--no-mini-run"],
                               ["sweep", "examples/sweep.yaml"], ["launch", "examples/quickstart.yaml"],
                               ["runs", "--tracking-uri", "sqlite:///mlflow.db"]]),
    "pyarrow": ("parquet", [["check", "--train", str(PARQUET)], ["lint", str(PARQUET)]]),
}


@pytest.fixture
def project(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns("mlflow.db*", ".tunegate"))
    return tmp_path


@pytest.mark.parametrize("package", sorted(NEEDED))
def test_a_command_that_needs_a_missing_package_is_a_usage_error_naming_its_extra(project, package):
    extra, commands = NEEDED[package]
    for argv, (code, stderr) in zip(commands, walk([package], commands, str(project))):
        assert code == 2, (argv, stderr)
        assert f"{package} " in stderr and f"pip install 'tunegate[{extra}]'" in stderr, (argv, stderr)
        assert "bug" not in stderr and "Traceback" not in stderr, (argv, stderr)


def test_without_openai_the_advisor_falls_back_to_its_rules_and_says_so(project):
    commands = [["advise", "examples/quickstart.yaml"], ["check", "examples/quickstart.yaml", "--advise"]]
    for argv, (code, stderr) in zip(commands, walk(["openai"], commands, str(project))):
        assert code == 0, (argv, stderr)
        assert "bug" not in stderr, (argv, stderr)


def test_with_every_optional_package_missing_the_static_commands_answer_and_the_rest_name_their_extra(project):
    every = sorted({*NEEDED, "openai", "peft", "accelerate", "matplotlib", "PyNomad", "psycopg", "bitsandbytes"})
    others = [c for _, commands in NEEDED.values() for c in commands]
    results = walk(every, STATIC + others, str(project))
    for argv, (code, stderr) in zip(STATIC, results):
        assert code == 0, (argv, stderr)
    for argv, (code, stderr) in zip(others, results[len(STATIC):]):
        assert code == 2 and "pip install 'tunegate[" in stderr, (argv, stderr)
    page = (project / "page.html").read_text(encoding="utf-8")
    assert "memory_breakdown.svg" in page and "pip install" not in page  # the charts need no extra
