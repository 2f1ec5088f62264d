"""Candidates evaluated at once: 1, 2 and 4 in parallel, in threads or on Dask or Ray worker processes,
give the same verdicts and the same losses.

tests/data/flows/parallel.yaml holds four candidates the gate approves. Two trainers in one process
once shared accelerate's process-wide AcceleratorState: a second `TrainingArguments` reset it under
the first trainer, which crashed with an AttributeError that the sweep recorded as a rejection.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.flows import FLOWS_DATA

pytestmark = [pytest.mark.slow, pytest.mark.nightly]  # ~5 min: make test-nightly


def _swept(folder: Path, max_parallel: int, runner: str = "threads") -> dict[str, Any]:
    from tunegate.flows.sweep import sweep

    shutil.copytree(FLOWS_DATA, folder)
    spec = yaml.safe_load((folder / "parallel.yaml").read_text())
    spec["sweep"]["max_parallel"] = max_parallel
    if runner != "threads":
        spec["sweep"]["task_runner"] = runner
    path = folder / f"parallel-{max_parallel}.yaml"
    path.write_text(yaml.safe_dump(spec))
    state = sweep(str(path), return_state=True)
    return state.result(raise_on_failure=False)


@pytest.fixture(scope="module")
def one_at_a_time(prefect_api, tiny_cache, tmp_path_factory) -> dict[str, Any]:
    return _swept(tmp_path_factory.mktemp("serial") / "flows", 1)


# dask with 2 workers runs in tests/sweep/test_worker_killed.py (with one worker killed)
@pytest.mark.parametrize(("runner", "max_parallel"), [("threads", 2), ("threads", 4), ("dask", 4), ("ray", 4)])
def test_candidates_in_parallel_are_all_approved_with_the_serial_losses(
        prefect_api, tiny_cache, tmp_path, one_at_a_time, runner, max_parallel):
    summary = _swept(tmp_path / "flows", max_parallel, runner)
    outcomes = summary["outcomes"]
    assert [o["reason"] for o in outcomes] == [""] * 4
    assert all(o["approved"] for o in outcomes)
    serial = {str(o["overrides"]): o["val_loss"] for o in one_at_a_time["outcomes"]}
    for o in outcomes:
        assert o["val_loss"] == pytest.approx(serial[str(o["overrides"])], rel=1e-5)
