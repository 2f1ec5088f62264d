"""The HealthCallback options the full run turns on, and its refusal to checkpoint diverged weights."""
from __future__ import annotations

import pytest

from tests.support.trainer import make_trainer
from tunegate.fullrun.health import HealthCallback
from tunegate.training.chat_tokens import IGNORE, EncodedChat

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


def steps_until_stopped(health: HealthCallback, norms: list[float]) -> int | None:
    """Feed real gradients with these norms to the callback, one optimizer step each."""
    import torch
    from transformers import TrainerControl, TrainerState

    layer = torch.nn.Linear(1, 1, bias=False)
    state, control = TrainerState(), TrainerControl()
    for step, norm in enumerate(norms, start=1):
        layer.weight.grad = torch.full_like(layer.weight, norm)
        health.on_pre_optimizer_step(None, state, control, model=layer)
        state.global_step = step
        if control.should_training_stop:
            return step
    return None


def test_by_default_one_non_finite_gradient_stops_the_run():
    assert steps_until_stopped(HealthCallback(), [0.5, float("inf"), 0.5]) == 2


def test_under_fp16_loss_scaling_skipped_steps_are_tolerated_while_the_scaler_recovers():
    health = HealthCallback(skip_tolerance=2)
    assert steps_until_stopped(health, [float("inf"), float("inf"), 0.5, float("nan"), 0.5]) is None
    assert not health.stopped


def test_a_scaler_that_keeps_skipping_stops_the_run():
    health = HealthCallback(skip_tolerance=2)
    assert steps_until_stopped(health, [0.5, float("inf"), float("inf"), float("inf")]) == 4
    assert health.problems[0].metric == "grad_norm" and health.problems[0].value == "inf"


def test_a_gradient_stuck_at_zero_stops_the_run_after_the_patience():
    health = HealthCallback(zero_grad_patience=3)
    assert steps_until_stopped(health, [0.5, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.5]) == 7
    assert health.problems[0].value == "0.0"


def test_zero_gradients_are_not_judged_unless_asked():
    assert steps_until_stopped(HealthCallback(), [0.0] * 5) is None


def test_a_stopped_run_saves_no_checkpoint_of_its_diverged_weights(tiny_cache, tmp_path, encoded):  # noqa: F811
    masked = [EncodedChat(e.input_ids, [IGNORE] * len(e.labels), e.full_length, False, None) for e in encoded]
    health = HealthCallback()
    trainer = make_trainer(tiny_cache, tmp_path, masked, health, save_strategy="steps", save_steps=1)
    trainer.train()
    assert health.stopped and trainer.state.global_step == 1
    assert not list(tmp_path.glob("checkpoint-*"))  # save_steps=1 would have saved checkpoint-1
