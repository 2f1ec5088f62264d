"""A real HF Trainer over the tiny model, for the HealthCallback tests, and its encoded records."""
from __future__ import annotations

import pytest

from tests.support.minirun import DATA, load_spec
from tunegate.dataset.records import read_chats
from tunegate.report import FindingCollector
from tunegate.training.chat_tokens import collate, encode_chats
from tunegate.training.device import RunPlace
from tunegate.training.model import apply_lora, load_model, load_tokenizer


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

    records = read_chats(DATA / "train.jsonl").records[:8]
    return encode_chats(AutoTokenizer.from_pretrained(tiny_cache), [r.messages for r in records], 256)
