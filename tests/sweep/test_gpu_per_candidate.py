"""One GPU per candidate, on the real engines, on a CPU machine.

tests/data/runners/one_gpu.yaml sweeps two candidates at once (max_parallel 2) on hardware with one
GPU and `sweep.gpu_per_candidate: true`. The local cluster declares that one GPU (Ray: num_gpus=1;
Dask: one worker holding the resource GPU=1), each candidate asks for it through
`candidate_resources`, and the engine must then run the candidates one after the other, each seeing
device 0 only. A probe task stands in for a candidate's evaluation: same runner, same request, no
training, so the test costs the engine's start-up and a few seconds.
"""
from __future__ import annotations

import os
import time
from typing import Any

import pytest
from prefect import flow, task

from tests.support.paths import DATA

SPEC = DATA / "runners" / "one_gpu.yaml"
PROBES = 3
pytestmark = pytest.mark.slow  # a real Ray or Dask cluster starts: ~30-60 s each


@task
def probe(i: int) -> dict[str, Any]:
    """Where and when one 'candidate' ran."""
    start = time.time()
    time.sleep(1.0)
    return {"i": i, "start": start, "end": time.time(), "pid": os.getpid(),
            "devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "threads": os.environ.get("OMP_NUM_THREADS")}


def _on_engine(runner: str, gpu_per_candidate: bool | None = True) -> list[dict[str, Any]]:
    from tunegate.spec.check import parse_spec
    from tunegate.tasks.task_runners import candidate_resources, task_runner

    spec = parse_spec(str(SPEC)).require()
    sweep = spec.sweep.model_copy(update={"task_runner": runner, "gpu_per_candidate": gpu_per_candidate})
    spec = spec.model_copy(update={"sweep": sweep})

    @flow(name="probe-candidates")
    def probes() -> list[dict[str, Any]]:
        with candidate_resources(spec):
            futures = probe.map(range(PROBES))
        return [f.result() for f in futures]

    return probes.with_options(task_runner=task_runner(spec))()


def _overlapping(runs: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(a["i"], b["i"]) for a in runs for b in runs
            if a["i"] < b["i"] and a["start"] < b["end"] and b["start"] < a["end"]]


@pytest.fixture(scope="module")
def on_ray(prefect_api) -> list[dict[str, Any]]:
    pytest.importorskip("prefect_ray", reason="sweep.task_runner ray needs pip install 'tunegate[ray]'")
    return _on_engine("ray")


@pytest.fixture(scope="module")
def on_dask(prefect_api) -> list[dict[str, Any]]:
    return _on_engine("dask")


def test_ray_runs_candidates_asking_for_the_one_gpu_one_at_a_time(on_ray):
    assert len(on_ray) == PROBES
    assert _overlapping(on_ray) == []


def test_ray_shows_each_candidate_only_the_gpu_it_was_given(on_ray):
    assert {r["devices"] for r in on_ray} == {"0"}


def test_ray_workers_run_torch_on_a_deliberate_number_of_threads(on_ray):
    from tunegate.fullrun.launcher import torch_threads

    assert {r["threads"] for r in on_ray} == {str(torch_threads(2))}


def test_dask_runs_candidates_asking_for_the_one_gpu_one_at_a_time(on_dask):
    assert len(on_dask) == PROBES
    assert _overlapping(on_dask) == []


def test_dask_pins_the_gpu_worker_to_its_own_device(on_dask):
    assert {r["devices"] for r in on_dask} == {"0"}


@pytest.mark.nightly  # the control: a third cluster start, not needed for CI's coverage
def test_without_a_gpu_request_the_same_engine_runs_candidates_at_once(prefect_api):
    """The control: the serial runs above come from the GPU request, not from the engine or the load."""
    runs = _on_engine("dask", gpu_per_candidate=False)
    assert len(runs) == PROBES
    assert _overlapping(runs) != []
