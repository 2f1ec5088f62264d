"""The settings axolotl and TRL configs carry reach the full run: Trainer arguments, packing, refusals."""
from __future__ import annotations

import math

import pytest

from tests.support.minirun import load_spec
from tests.support.paths import DATA
from tunegate.fullrun.args import training_arguments
from tunegate.fullrun.trainer import train
from tunegate.spec.check import parse_spec
from tunegate.spec.model import Spec
from tunegate.training.device import RunPlace

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


def test_an_axolotl_configs_schedule_and_optimizer_are_passed_to_the_trainer(tmp_path):
    # as mapped, before the spec rules (its adamw_8bit needs bitsandbytes: TG161 where it is missing)
    spec = Spec.model_validate(parse_spec(DATA / "configs" / "axolotl" / "lora-1b.yml").raw)
    spec = spec.model_copy(update={"training": spec.training.model_copy(update={
        "optimizer": "adamw_torch", "weight_decay": 0.01, "max_grad_norm": 0.3})})
    args = training_arguments(spec, tmp_path, RunPlace("cpu", "fp32", "sdpa"), total_steps=100)
    assert (args.optim.value, args.lr_scheduler_type.value) == ("adamw_torch", "cosine")
    assert (args.warmup_steps, args.weight_decay, args.max_grad_norm) == (10, 0.01, 0.3)


def test_an_axolotl_configs_adam_betas_and_epsilon_reach_the_trainer(tmp_path):
    spec = parse_spec(DATA / "configs" / "axolotl" / "lora-1b-adam-betas.yml").require()
    args = training_arguments(spec, tmp_path, RunPlace("cpu", "fp32", "sdpa"), total_steps=100)
    assert (args.adam_beta1, args.adam_beta2, args.adam_epsilon) == (0.9, 0.95, 1e-5)


def test_a_warmup_ratio_becomes_transformers_fractional_warmup_steps(tmp_path):
    spec = parse_spec(DATA / "configs" / "trl" / "sft.yaml").require()
    args = training_arguments(spec, tmp_path, RunPlace("cpu", "fp32", "sdpa"), total_steps=200)
    assert args.warmup_steps == 0.03 and args.get_warmup_steps(200) == 6


def test_an_8bit_optimizer_without_bitsandbytes_is_refused_before_anything_loads(tmp_path):
    pytest.importorskip("torch")
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is not None:
        pytest.skip("bitsandbytes is installed here")
    spec = load_spec("good", **{"training.optimizer": "adamw_8bit"})
    result = train(spec, output_dir=tmp_path, max_steps=1, log=lambda line: None)
    assert result.status == "failed" and "bitsandbytes" in result.reason


@pytest.mark.slow
def test_a_packed_run_trains_cosine_with_warmup_and_completes(tiny_cache, tmp_path):
    spec = load_spec("good", **{"training.packing": True, "training.lr_scheduler": "cosine",
                                "training.warmup_steps": 2, "training.optimizer": "adamw_torch"})
    lines: list[str] = []
    result = train(spec, output_dir=tmp_path, max_steps=4, log=lines.append)
    assert result.status == "completed", result.reason
    assert any(line.startswith("packing: 12 training records in") for line in lines)
    rates = [s.learning_rate for s in result.steps]
    assert rates[0] < rates[1] < rates[2] > rates[3]  # two warmup steps up to the peak, then cosine down
    assert all(math.isfinite(s.loss) for s in result.steps) and math.isfinite(result.val_loss)
