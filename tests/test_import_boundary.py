"""The static gate must run before the training stack is installed: it imports none of it."""
from __future__ import annotations

from tests.support.imports import modules_after

HEAVY = ["torch", "transformers", "peft", "prefect", "mlflow"]


def test_static_modules_import_no_training_or_orchestration_stack():
    loaded = modules_after("import tunegate.cli.main, tunegate.gate, tunegate.dataset.stage, tunegate.spec.check")
    assert not {m.split(".")[0] for m in loaded} & set(HEAVY)


def test_a_dataset_check_through_the_cli_imports_none_of_them():
    code = ("import sys\nfrom tunegate.cli.main import main\n"
            "main(['check', '--train', 'examples/data/train.jsonl', '--json'])")
    loaded = modules_after(code)
    assert not {m.split(".")[0] for m in loaded} & set(HEAVY)


def test_approving_the_quickstart_imports_neither_scipy_nor_the_training_stack():
    # The near-duplicate pass runs on every approval: it must not pull in scipy (datasketch did,
    # ~0.5 s of a 0.7 s check) nor anything of training or orchestration.
    code = ("import sys\nfrom tunegate.cli.main import main\n"
            "assert main(['check', 'examples/quickstart.yaml']) == 0")
    loaded = {m.split(".")[0] for m in modules_after(code)}
    assert not loaded & {*HEAVY, "scipy", "datasketch"}


def test_rejecting_the_broken_spec_imports_neither_scipy_numpy_nor_the_training_stack():
    # A rejection stops before the overlap stage, so not even numpy (the near pass's) is loaded.
    code = ("import sys\nfrom tunegate.cli.main import main\n"
            "assert main(['check', 'examples/broken.yaml']) == 1")
    loaded = {m.split(".")[0] for m in modules_after(code)}
    assert not loaded & {*HEAVY, "scipy", "datasketch", "numpy"}


def test_rejecting_the_broken_spec_loads_no_later_stage_nor_the_advisor_or_page_writers():
    # A rejection at the spec is the gate's fastest answer (<= 0.25 s, docs/benchmarks.md): it
    # loads only what the spec stage and the text report use.
    code = ("import sys\nfrom tunegate.cli.main import main\n"
            "assert main(['check', 'examples/broken.yaml']) == 1")
    loaded = modules_after(code)
    later = {"tunegate.dataset.stage", "tunegate.overlap.stage", "tunegate.estimate.stage", "tunegate.advisor",
             "tunegate.output.html", "tunegate.charts", "tunegate.cli.sweep", "tunegate.cli.advise"}
    assert not loaded & later
