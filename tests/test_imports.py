"""Importing a module loads that module and what it uses, never its wing's whole front door; a check
loads what its path needs (the training and orchestration stacks never, numpy only for files too
big for the in-memory passes or where the compiled loops are not built). Behaviour, not timing:
each test counts what a fresh interpreter loaded."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from tests.support.imports import modules_after, packages
from tests.support.paths import ROOT
from tunegate.native import compiled

WINGS = sorted(p.parent.name for p in (ROOT / "tunegate").glob("*/__init__.py"))
# Wings whose package is more than a door: formats' package is the format registry (its light,
# stdlib-only format modules), native's decides whether the compiled loops are used.
WHOLE = {"tunegate.formats", "tunegate.native"}
TRAINING_AND_ORCHESTRATION = {"torch", "transformers", "peft", "prefect", "mlflow"}


def ours(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "tunegate" or m.startswith("tunegate.")}


def test_loading_every_wing_package_imports_none_of_their_modules():
    loaded = ours(modules_after("import " + ", ".join(f"tunegate.{w}" for w in WINGS)))
    beyond = {m for m in loaded - {"tunegate", "tunegate.front_door", *(f"tunegate.{w}" for w in WINGS)}
              if not m.startswith(tuple(f"{w}." for w in WHOLE))}
    assert beyond == set()


def test_importing_the_record_reader_loads_a_couple_dozen_tunegate_modules_and_no_pydantic():
    # The reader, its containers and the format registry; it was 64 modules when each wing's
    # package imported its front door (the dataset stage, and through it the spec and the report).
    loaded = modules_after("import tunegate.dataset.records")
    assert len(ours(loaded)) <= 25, sorted(ours(loaded))
    assert "pydantic" not in packages(loaded)


def test_importing_the_gpu_catalog_loads_it_alone():
    assert ours(modules_after("import tunegate.spec.gpus")) == {"tunegate", "tunegate.front_door", "tunegate.spec",
                                                                 "tunegate.spec.gpus"}


@pytest.mark.parametrize("wing", ["advisor", "charts", "dataset", "estimate", "overlap", "processes", "progress",
                                  "pruning", "spec"])
def test_each_name_a_wing_package_offers_is_the_one_its_module_defines(wing):
    # The other lazy wings (fullrun, local_api, minirun, sweep, tracking) load torch, Prefect or MLflow
    # behind their doors; their doors are the same four lines.
    package = importlib.import_module(f"tunegate.{wing}")
    for name in package.__all__:
        assert getattr(package, name) is getattr(importlib.import_module(package._HOME[name]), name)


def test_a_name_no_wing_package_offers_is_an_attribute_error():
    import tunegate.dataset

    with pytest.raises(AttributeError, match="no attribute 'validate'"):
        tunegate.dataset.validate  # noqa: B018


def test_a_check_rejected_at_the_data_stage_imports_neither_numpy_nor_the_training_stack():
    # The near-duplicate pass holds a small split's records until its answer is asked for, and
    # after a rejection at the data stage the gate never asks.
    code = ("from tunegate.cli.main import main\n"
            "assert main(['check', '--train', 'tests/data/dataset/bad/last_from_user.jsonl',"
            " '--validation', 'examples/data/validation.jsonl']) == 1")
    assert not packages(modules_after(code)) & {"numpy", *TRAINING_AND_ORCHESTRATION}


def test_a_check_of_bare_data_files_reads_no_spec():
    # Neither the YAML reader nor the spec's models: the overlap stage's defaults are a dataclass.
    code = ("from tunegate.cli.main import main\n"
            "assert main(['check', '--train', 'examples/data/train.jsonl',"
            " '--validation', 'examples/data/validation.jsonl']) == 0")
    loaded = modules_after(code)
    assert not loaded & {"tunegate.spec.check", "tunegate.spec.model", "tunegate.spec.overlap_settings",
                         "tunegate.spec.yaml_loader", "yaml"}


@pytest.mark.parametrize("train", ["examples/data/train.jsonl", "tests/data/dataset/bad/last_from_user.jsonl"])
def test_a_check_of_bare_data_files_writes_its_json_report_without_pydantic(train):
    # The report is dataclasses; pydantic (0.12-0.18 CPU s per process) only reads one back.
    code = ("from tunegate.cli.main import main\n"
            f"assert main(['check', '--train', '{train}', '--validation', 'examples/data/validation.jsonl',"
            " '--json']) in (0, 1)")
    assert not packages(modules_after(code)) & {"pydantic", "pydantic_core"}


def test_a_near_pass_fed_both_splits_sketches_them_only_when_its_answer_is_asked_for():
    # The validation file's last record (line 20) is a near copy of the flows train file's first.
    # Both splits fit one batch: the compiled loops answer, numpy is never loaded.
    code = ("import sys\n"
            "from tunegate.overlap.near import NearPass, NearSettings, feed\n"
            "from tunegate.dataset.split import iter_split\n"
            "near = NearPass('validation', NearSettings(threshold=0.8, shingle_size=5, num_perm=128))\n"
            "for role, path in (('validation', 'tests/data/overlap/validation_one_near_copy.jsonl'),"
            " ('train', 'tests/data/flows/train.jsonl')):\n"
            "    for line, index, record in iter_split([path]):\n"
            "        feed(near, role, line, index, record)\n"
            "    near.finish(role)\n"
            "assert near.complete and 'numpy' not in sys.modules\n"
            "assert [(p.validation, p.train) for p in near.result().pairs] == [((20, 19), (1, 0))]")
    loaded = modules_after(code)  # its asserts are the test too: a failed one fails the run
    assert "numpy" not in packages(loaded) or compiled is None


def test_the_quickstart_check_imports_neither_numpy_nor_the_training_stack():
    # Its 85 + 20 records: the exact joins in memory, the near pass in the compiled loops (numpy's
    # import was a quarter of the command's 0.2 s), which also draw the densify table as
    # numpy.random would (tunegate/native/densify_table.c); the default band layout is written down.
    code = ("from tunegate.cli.main import main\n"
            "assert main(['check', 'examples/quickstart.yaml']) == 0")
    loaded = packages(modules_after(code))
    assert not loaded & TRAINING_AND_ORCHESTRATION
    assert "numpy" not in loaded or compiled is None


def test_a_check_read_in_parts_by_workers_imports_numpy_in_no_process_while_its_index_fits_in_memory():
    # The near pass streams train in batches past an index shared with the workers as files; the
    # rows stay bytes and the compiled loops look them up (tunegate.overlap.plain_index): numpy's
    # import was ~45 ms of a 55 MB check's CPU, on the gate's path before its worker forked. Every
    # process's imports go to the one stderr (-X importtime), the forked worker's too.
    code = ("from tunegate.dataset.stage import validate_dataset\n"
            "from tunegate.overlap import near\n"
            "from tunegate.overlap.exact import OverlapObserver\n"
            "near.BATCH_ROWS = 3\n"
            "files = {'train': 'tests/data/flows/train.jsonl',"
            " 'validation': 'tests/data/overlap/validation_one_near_copy.jsonl'}\n"
            "observer = OverlapObserver(near.NearPass('validation', near.NearSettings(0.8, 5, 128)))\n"
            "validate_dataset(files, 5, [observer], workers=2, part_bytes=2048)\n"
            "assert observer.near._shared is not None  # the index went to the workers as files\n"
            "assert [(p.validation, p.train) for p in observer.near.result().pairs] == [((20, 19), (1, 0))]\n")
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "tunegate.overlap.plain_index" in imported
    assert "numpy" not in imported or compiled is None
