"""Launching `tunegate.fullrun.trainer`: the command per launcher, and a launched run's result or failure."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.minirun import DATA, load_spec
from tests.support.paths import ROOT
from tunegate.errors import LaunchConfigError
from tunegate.fullrun.launcher import launch_command, run_launched, training_env
from tunegate.fullrun.publish import is_complete
from tunegate.fullrun.result import TrainResult

SPEC = DATA / "good.yaml"
OUT, RESULT = Path("/runs/full"), Path("/runs/full/result.json")
PROGRAM = ["-m", "tunegate.fullrun.trainer", "--spec", str(SPEC), "--output-dir", str(OUT), "--result", str(RESULT)]


def command(launcher: str, *, cuda: bool, env: dict[str, str] | None = None, count: int = 4,
            max_steps: int | None = None, log=None) -> list[str]:
    spec = load_spec("good", **{"full_run.launcher": launcher, "hardware.count": count})
    return launch_command(spec, SPEC, OUT, RESULT, max_steps, env=env or {}, cuda=cuda,
                          log=log or (lambda line: None))


def flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_accelerate_launches_the_module_with_the_spec_precision():
    cmd = command("accelerate", cuda=True, count=1)
    assert cmd[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert flag(cmd, "--num_processes") == "1" and flag(cmd, "--mixed_precision") == "bf16"
    assert "--multi_gpu" not in cmd
    assert cmd[-len(PROGRAM):] == PROGRAM


def test_accelerate_runs_one_process_per_gpu_on_a_multi_gpu_machine():
    cmd = command("accelerate", cuda=True, count=4, max_steps=20)
    assert flag(cmd, "--num_processes") == "4" and "--multi_gpu" in cmd
    assert int(flag(cmd, "--main_process_port")) > 0  # a free port, not a collision on 29500
    assert cmd[-2:] == ["--max-steps", "20"]


def test_accelerate_takes_the_node_layout_from_the_environment():
    env = {"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "29600"}
    cmd = command("accelerate", cuda=True, count=16, env=env)
    # accelerate counts processes over all machines: 16 GPUs = 2 nodes x 8
    assert flag(cmd, "--num_processes") == "16" and flag(cmd, "--num_machines") == "2"
    assert flag(cmd, "--machine_rank") == "1" and flag(cmd, "--main_process_ip") == "10.0.0.5"
    assert flag(cmd, "--main_process_port") == "29600"


def test_a_multi_node_run_without_the_master_address_is_refused():
    with pytest.raises(LaunchConfigError, match="MASTER_ADDR"):
        command("accelerate", cuda=True, env={"NNODES": "2"})


def test_torchrun_launches_the_module_per_node():
    cmd = command("torchrun", cuda=True, count=4)
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert flag(cmd, "--nproc_per_node") == "4" and "--standalone" in cmd
    assert cmd[-len(PROGRAM):] == PROGRAM
    multi = command("torchrun", cuda=True, count=16,
                    env={"NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.5"})
    assert flag(multi, "--nproc_per_node") == "8" and flag(multi, "--nnodes") == "2"
    assert flag(multi, "--master_addr") == "10.0.0.5" and flag(multi, "--master_port") == "29500"


def test_full_run_num_processes_overrides_the_gpu_count():
    spec = load_spec("good", **{"full_run.num_processes": 2, "hardware.count": 8})
    cmd = launch_command(spec, SPEC, OUT, RESULT, env={}, cuda=True)
    assert flag(cmd, "--num_processes") == "2"


def test_python_runs_the_module_directly():
    assert command("python", cuda=True) == [sys.executable, *PROGRAM]


def test_a_machine_without_cuda_launches_one_process_and_says_so():
    lines: list[str] = []
    cmd = command("accelerate", cuda=False, count=4, log=lines.append)
    assert flag(cmd, "--num_processes") == "1" and "--multi_gpu" not in cmd
    assert lines == ["no CUDA on this machine: launching 1 process instead of 4 (one per GPU)"]
    assert flag(command("torchrun", cuda=False, count=4), "--nproc_per_node") == "1"


def test_fp32_asks_accelerate_for_no_mixed_precision():
    spec = load_spec("good", **{"training.precision": "fp32"})
    assert flag(launch_command(spec, SPEC, OUT, RESULT, env={}, cuda=False), "--mixed_precision") == "no"


def test_the_training_environment_carries_no_api_key(monkeypatch):
    spec = load_spec("good", **{"advisor.api_key_env": "MY_ADVISOR_KEY"})
    env = training_env(spec, {"MY_ADVISOR_KEY": "sk-secret", "OPENAI_API_KEY": "sk-other", "HOME": "/root"})
    assert "MY_ADVISOR_KEY" not in env and "OPENAI_API_KEY" not in env and env["HOME"] == "/root"
    assert env["PYTHONUNBUFFERED"] == "1" and env["PYTHONPATH"].split(":")[0] == str(ROOT)


def test_the_flows_import_the_launcher_and_the_result_without_the_training_stack():
    code = ("import sys; from tunegate.fullrun.launcher import launch_command, run_launched; "
            "from tunegate.fullrun.result import TrainResult; from tunegate.fullrun.trainer import train; "
            "print(sorted(m for m in ('torch', 'transformers', 'peft', 'accelerate') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_a_run_that_dies_without_a_result_fails_with_the_tail_of_its_output(tmp_path):
    result_path = tmp_path / "result.json"
    TrainResult(status="completed").write(result_path)  # a previous run's: must not be read as this one's
    lines: list[str] = []
    cmd = [sys.executable, "-c", "import sys; print('loading the model'); sys.exit(3)"]
    result = run_launched(cmd, result_path, log=lines.append)
    assert result.status == "failed" and result.codes == ["TG707"]
    assert "code 3" in result.reason and "loading the model" in result.reason
    assert lines == ["loading the model"]


def test_a_launcher_that_is_not_there_fails_instead_of_raising(tmp_path):
    result = run_launched([str(tmp_path / "no-launcher")], tmp_path / "result.json", log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG707"] and "cannot start" in result.reason


def test_a_run_past_its_timeout_is_stopped_and_fails(tmp_path):
    cmd = [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(120)"]
    result = run_launched(cmd, tmp_path / "result.json", timeout_s=2, log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG711"]
    assert "timeout of 2 s" in result.reason and "started" in result.reason


@pytest.mark.slow
def test_accelerate_launch_runs_the_trainer_and_its_result_is_read(tiny_cache, tmp_path):
    spec = load_spec("good")
    out, result_path = tmp_path / "out", tmp_path / "out" / "result.json"
    cmd = launch_command(spec, SPEC, out, result_path, max_steps=2, log=lambda line: None)
    assert cmd[2] == "accelerate.commands.launch"
    lines: list[str] = []
    # from another folder: training_env puts this tunegate on PYTHONPATH
    result = run_launched(cmd, result_path, timeout_s=300, log=lines.append, env=training_env(spec), cwd=tmp_path)
    assert result.status == "completed", "\n".join(lines[-20:])
    assert result.global_step == 2 and [s.step for s in result.steps] == [1, 2]
    assert math.isfinite(result.final_train_loss) and math.isfinite(result.val_loss)
    assert is_complete(Path(result.adapter_dir))
    assert any(line.startswith("step 2/2 loss") for line in lines)  # the run's output was streamed


def test_an_explicit_process_count_runs_on_the_cpu_over_gloo_with_torchrun():
    lines: list[str] = []
    spec = load_spec("good", **{"full_run.num_processes": 2})
    cmd = launch_command(spec, SPEC, Path("out"), Path("out/r.json"), cuda=False, log=lines.append)
    assert cmd[2] == "torch.distributed.run" and flag(cmd, "--nproc_per_node") == "2"
    assert lines == ["2 processes on the CPU: launched with torchrun (gloo), as accelerate launch runs one on a CPU"]
