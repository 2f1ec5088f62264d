"""training.compile_mode reaches the full run's Trainer: torch.compile's mode, only when compiling."""
from __future__ import annotations

import pytest

from tests.support.minirun import load_spec
from tunegate.fullrun.args import training_arguments
from tunegate.training.device import RunPlace

pytest.importorskip("transformers")
CPU = RunPlace("cpu", "fp32", "sdpa")


def test_the_spec_s_compile_mode_is_the_trainer_s_torch_compile_mode(tmp_path):
    spec = load_spec("good", **{"training.compile": True, "training.compile_mode": "max-autotune"})
    args = training_arguments(spec, tmp_path, CPU, total_steps=10)
    assert args.torch_compile and args.torch_compile_mode == "max-autotune"


def test_without_compile_no_mode_is_passed_which_would_switch_compile_on(tmp_path):
    args = training_arguments(load_spec("good"), tmp_path, CPU, total_steps=10)
    assert not args.torch_compile and args.torch_compile_mode is None
