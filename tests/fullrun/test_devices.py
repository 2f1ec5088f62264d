"""Each training process sees exactly the GPUs it plans to use, from the parent's own list (issue 31).

One process on an 8-GPU box otherwise sees all 8 and the HF Trainer wraps the model in DataParallel.
"""
from __future__ import annotations

import pytest

from tunegate.errors import LaunchConfigError, UsageError
from tunegate.fullrun.devices import ENV, parent_devices, planned_devices


def test_one_process_on_an_eight_gpu_machine_sees_one_gpu():
    assert planned_devices({}, 1, machine_gpus=8)[ENV] == "0"


def test_the_devices_come_from_the_parents_own_list_as_a_scheduler_set_it():
    slurm = {ENV: "4,5,6,7"}
    assert planned_devices(slurm, 2)[ENV] == "4,5"
    uuids = {ENV: "GPU-1a2b, GPU-3c4d"}
    assert planned_devices(uuids, 1)[ENV] == "GPU-1a2b"


def test_more_processes_than_visible_gpus_is_a_launch_error_naming_both():
    with pytest.raises(LaunchConfigError, match="4 processes.*only 2 GPU"):
        planned_devices({ENV: "0,1"}, 4)


def test_a_machine_without_gpus_is_left_as_it_is():
    assert planned_devices({"HOME": "/root"}, 1, machine_gpus=0) == {"HOME": "/root"}
    assert parent_devices({ENV: ""}) == []


def test_dask_gpu_worker_i_sees_the_ith_of_the_parents_devices():
    pytest.importorskip("distributed")
    from tunegate.tasks.task_runners import gpu_workers

    workers = gpu_workers(2, {"OMP_NUM_THREADS": "1"}, parent={ENV: "6,7"})
    assert [w["options"]["env"][ENV] for w in workers.values()] == ["6", "7"]
    with pytest.raises(UsageError, match="2 GPU workers.*only 1 GPU"):
        gpu_workers(2, {}, parent={ENV: "3"})


def test_a_sweep_candidate_trains_on_one_gpu_of_its_worker(monkeypatch):
    from tests.support.minirun import load_spec
    from tunegate.fullrun.launcher import candidate_env

    monkeypatch.setenv(ENV, "2,3")
    assert candidate_env(load_spec("good"), 1)[ENV] == "2"


def test_a_single_process_that_sees_several_gpus_never_wraps_the_model_in_data_parallel():
    pytest.importorskip("transformers")
    from transformers import TrainingArguments

    from tunegate.fullrun.args import one_device_per_process

    args = TrainingArguments(output_dir="unused", report_to="none", use_cpu=True)
    args._n_gpu = 4  # what transformers counts in one process on a 4-GPU machine
    assert one_device_per_process(args).n_gpu == 1


def test_ray_is_told_the_gpus_it_can_use_not_the_declared_count(monkeypatch):
    from tests.support.minirun import load_spec
    from tunegate.tasks.ray_runner import local_gpus

    spec = load_spec("good", **{"hardware.count": 2})
    monkeypatch.setenv(ENV, "5,6,7")
    assert local_gpus(spec) == 2
    monkeypatch.setenv(ENV, "5")
    with pytest.raises(UsageError, match="hardware.count is 2 but only 1 GPU"):
        local_gpus(spec)
    monkeypatch.setenv(ENV, "")  # a CPU machine: the declared layout, run on the CPU
    assert local_gpus(spec) == 2


def test_a_dask_cluster_without_gpu_workers_is_refused_before_candidates_wait_forever():
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    from tunegate.tasks.task_runners import require_gpu_workers

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cpu_only:
        with pytest.raises(UsageError, match="no worker of the Dask cluster.*holds the resource GPU"):
            require_gpu_workers(cpu_only.scheduler_address)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                      resources={"GPU": 1}) as with_gpu:
        require_gpu_workers(with_gpu.scheduler_address)


def test_a_candidate_that_asked_for_a_gpu_and_ran_on_the_cpu_says_so():
    from tests.support.minirun import load_spec
    from tunegate.report import GateReport, StageResult
    from tunegate.sweep.candidate_gate import _said_if_no_gpu

    ran = GateReport.from_stages([StageResult(name="mini-run", status="passed", stats={"device": "cpu"})])
    asked = load_spec("good", **{"sweep.gpu_per_candidate": True})
    told = _said_if_no_gpu(asked, ran)
    [finding] = told.stages[0].findings
    assert (finding.code, finding.severity, told.gates_passed) == ("TG392", "warning", True)
    assert _said_if_no_gpu(load_spec("good", **{"sweep.gpu_per_candidate": False}), ran) is ran
    on_gpu = GateReport.from_stages([StageResult(name="mini-run", status="passed", stats={"device": "cuda"})])
    assert _said_if_no_gpu(asked, on_gpu) is on_gpu

