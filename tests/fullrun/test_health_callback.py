"""HealthCallback: a real HF Trainer on the tiny model stops at the first non-finite value."""
from __future__ import annotations

import pytest

from tests.support.trainer import make_trainer
from tunegate.fullrun.health import HealthCallback
from tunegate.training.chat_tokens import IGNORE, EncodedChat

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


def test_a_healthy_run_trains_every_step_untouched(tiny_cache, tmp_path, encoded):
    health = HealthCallback()
    trainer = make_trainer(tiny_cache, tmp_path, encoded, health)
    trainer.train()
    assert trainer.state.global_step == 4
    assert not health.stopped and health.problems == []


def test_fully_masked_batches_stop_the_run_at_the_first_step(tiny_cache, tmp_path, encoded):
    masked = [EncodedChat(e.input_ids, [IGNORE] * len(e.labels), e.full_length, False, None) for e in encoded]
    health = HealthCallback()
    trainer = make_trainer(tiny_cache, tmp_path, masked, health)
    trainer.train()
    assert health.stopped
    assert trainer.state.global_step == 1  # stopped after the first step instead of running all 4
    assert {p.metric for p in health.problems} <= {"loss", "grad_norm"}
    assert all(p.value in ("nan", "inf", "-inf") for p in health.problems)


def test_the_trainer_default_that_hides_nan_losses_is_refused(tiny_cache, tmp_path, encoded):
    trainer = make_trainer(tiny_cache, tmp_path, encoded, HealthCallback(), logging_nan_inf_filter=True)
    with pytest.raises(ValueError, match="logging_nan_inf_filter=False"):
        trainer.train()
