"""Packed rows: several records per row, each attending only to itself, every trained token kept."""
from __future__ import annotations

import pytest

from tunegate.training.chat_tokens import IGNORE, collate, encode_chats
from tunegate.training.packing import collate_packed, pack

CHATS = [[{"role": "user", "content": f"Question {i}: how do I rotate my API key?"},
          {"role": "assistant", "content": "Open Settings > Keys and press Rotate. " * (i + 1)}] for i in range(6)]


@pytest.fixture
def tiny(tiny_cache):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_cache)
    model = AutoModelForCausalLM.from_pretrained(tiny_cache, attn_implementation="sdpa").eval()
    model.config.use_cache = False  # as the trainers load it (tunegate.training.model.load_model)
    return tokenizer, model


def test_best_fit_packs_whole_records_into_rows_that_fit(tiny):
    tokenizer, _ = tiny
    encoded = encode_chats(tokenizer, CHATS, 512)
    rows = pack(encoded, 160)
    assert sorted(id(c) for row in rows for c in row) == sorted(id(c) for c in encoded)
    assert all(sum(len(c.input_ids) for c in row) <= 160 for row in rows)
    assert len(rows) < len(encoded)


def test_a_packed_record_sees_only_itself(tiny):
    import torch

    tokenizer, model = tiny
    encoded = encode_chats(tokenizer, CHATS[:3], 512)
    [row] = pack(encoded, 512)
    batch = collate_packed([row], tokenizer.pad_token_id)
    with torch.no_grad():
        packed = model(**batch).logits[0]
        start = 0
        for chat in row:
            alone = model(**collate([chat], tokenizer.pad_token_id)).logits[0]
            n = len(chat.input_ids)
            assert torch.allclose(packed[start:start + n], alone, atol=1e-4)
            start += n


def test_labels_keep_every_trained_token_but_no_record_learns_to_continue_the_last(tiny):
    tokenizer, _ = tiny
    encoded = encode_chats(tokenizer, CHATS, 512)
    rows = pack(encoded, 400)
    batch = collate_packed(rows, tokenizer.pad_token_id)
    kept = int((batch["labels"] != IGNORE).sum())
    assert kept == sum(c.trainable_tokens for c in encoded)  # the first token of a record is never a label
    assert int((batch["position_ids"] == 0).sum()) >= len(encoded)
