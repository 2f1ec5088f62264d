"""torch.compile in axolotl, TRL and LLaMA-Factory configs maps onto training.compile and compile_mode.

Each tool hands `torch_compile`, `torch_compile_mode` and `torch_compile_backend` to transformers'
TrainingArguments, where a mode alone switches compiling on. Before, they were listed as keys
tunegate does not model (TG140), and the estimate priced the run as eager.
"""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.spec.check import parse_spec

CONFIGS = DATA / "configs"


def with_keys(tmp_path, source, extra: str):
    path = tmp_path / source.name
    text = source.read_text(encoding="utf-8").replace("../data/", f"{CONFIGS / 'data'}/")
    path.write_text(text + "\n" + extra, encoding="utf-8")
    return parse_spec(path)


@pytest.mark.parametrize(("extra", "compiled", "mode"), [
    ("torch_compile: true\ntorch_compile_mode: max-autotune\n", True, "max-autotune"),
    ("torch_compile: auto\n", True, "default"),  # axolotl: compile where the run's torch >= 2.6
    ("torch_compile_mode: reduce-overhead\n", True, "reduce-overhead"),  # a mode alone switches it on
    ("torch_compile: false\n", False, "default"),
])
def test_an_axolotl_configs_compile_keys_set_the_spec(tmp_path, extra, compiled, mode):
    parsed = with_keys(tmp_path, CONFIGS / "axolotl" / "lora-1b.yml", extra)
    t = parsed.require().training
    assert (t.compile, t.compile_mode) == (compiled, mode)
    assert not any("torch_compile" in f.message for f in parsed.result.findings if f.code == "TG140")


def test_a_trl_config_compiles_as_its_training_arguments_do(tmp_path):
    t = with_keys(tmp_path, CONFIGS / "trl" / "sft.yaml", "torch_compile: true\n").require().training
    assert (t.compile, t.compile_mode) == (True, "default")


def test_another_compile_backend_is_a_warning_that_tunegate_launch_cannot_run_it(tmp_path):
    parsed = with_keys(tmp_path, CONFIGS / "axolotl" / "lora-1b.yml", "torch_compile: true\ntorch_compile_backend: "
                                                                      "aot_eager\n")
    [found] = [f for f in parsed.result.findings if f.key == "torch_compile_backend"]
    assert (found.code, found.severity) == ("TG147", "warning") and "aot_eager" in found.message
