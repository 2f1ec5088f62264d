"""HealthCallback: a real HF Trainer on the tiny model stops at the first non-finite value."""
from __future__ import annotations

import pytest

from tests.minirun_support import DATA, load_spec, tiny_cache  # noqa: F401  (session fixture)
from tunegate.chat_records import read_records
from tunegate.health import HealthCallback
from tunegate.minirun_model import RunPlace, apply_lora, load_model, load_tokenizer
from tunegate.report import FindingCollector
from tunegate.tokenize_chat import IGNORE, EncodedChat, collate, encode_chats

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


def make_trainer(tiny_cache, tmp_path, encoded, callback, **args):
    from transformers import Trainer, TrainingArguments

    spec = load_spec("good", **{"training.precision": "fp32"})
    model = apply_lora(load_model(str(tiny_cache), spec, RunPlace("cpu", "fp32", "sdpa")), spec,
                       FindingCollector("mini-run"))
    pad = load_tokenizer(str(tiny_cache), spec).pad_token_id
    settings = dict(output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=2, learning_rate=1e-3,
                    logging_steps=1, logging_nan_inf_filter=False, save_strategy="no", report_to=[],
                    use_cpu=True, disable_tqdm=True, remove_unused_columns=False)
    settings.update(args)
    return Trainer(model=model, args=TrainingArguments(**settings), train_dataset=encoded,
                   data_collator=lambda chats: collate(chats, pad), callbacks=[callback])


@pytest.fixture
def encoded(tiny_cache):
    from transformers import AutoTokenizer

    records = read_records(DATA / "train.jsonl").records[:8]
    return encode_chats(AutoTokenizer.from_pretrained(tiny_cache), [r.messages for r in records], 256)


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
