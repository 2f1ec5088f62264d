"""The mini-run steps with the optimizer the full run's HF Trainer builds (issue 31).

Before, the mini-run always stepped torch's AdamW, so an 8-bit, paged, Adafactor or SGD optimizer
first ran hours into the full run.
"""
from __future__ import annotations

import pytest

from tests.support.minirun import load_spec
from tunegate.training.optimizers import build_optimizer, trainer_choice

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

RUNNABLE_HERE = ["adamw_torch", "adamw_torch_fused", "adafactor", "sgd"]


@pytest.mark.parametrize("name", RUNNABLE_HERE)
def test_the_choice_is_the_trainers_own(name, tmp_path):
    from transformers import Trainer, TrainingArguments

    spec = load_spec("good", **{"training.optimizer": name, "training.learning_rate": 3e-4})
    args = TrainingArguments(output_dir=str(tmp_path), optim=name, learning_rate=3e-4, report_to="none",
                             adam_beta1=spec.training.adam_beta1, adam_beta2=spec.training.adam_beta2,
                             adam_epsilon=spec.training.adam_epsilon)
    assert trainer_choice(spec) == Trainer.get_optimizer_cls_and_kwargs(args)


def test_weight_decay_spares_biases_and_norms_as_the_trainer_does():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    model.register_module("post_norm", torch.nn.Linear(4, 4))
    optimizer, stand_in = build_optimizer(model, load_spec("good", **{"training.weight_decay": 0.1}))
    decayed = {id(p) for g in optimizer.param_groups if g["weight_decay"] == 0.1 for p in g["params"]}
    named = dict(model.named_parameters())
    assert stand_in == "" and decayed == {id(named["0.weight"]), id(named["1.weight"])}
    assert type(optimizer).__name__ == "AdamW" and optimizer.defaults["fused"] is True  # adamw_torch_fused


@pytest.mark.skipif(__import__("importlib").util.find_spec("bitsandbytes") is not None,
                    reason="bitsandbytes is installed: the 8-bit optimizer is built")
def test_an_8_bit_optimizer_without_bitsandbytes_here_stands_in_with_adamw_and_says_why():
    model = torch.nn.Linear(4, 4)
    optimizer, stand_in = build_optimizer(model, load_spec("good", **{"training.optimizer": "paged_adamw_8bit"}))
    assert type(optimizer) is torch.optim.AdamW and "bitsandbytes" in stand_in
