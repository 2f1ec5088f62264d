"""Each dataset format tokenised as the trainers that read it do: what carries a label, what not."""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.report import FindingCollector
from tunegate.training.chat_tokens import IGNORE, encode_chats, encode_plain
from tunegate.training.token_audit import audit_split

FORMATS = DATA / "formats" / "good"


def trained(tokenizer, enc) -> str:
    return tokenizer.decode([t for t in enc.labels if t != IGNORE])


def test_a_weight_0_reply_is_context_and_carries_no_label(tokenizer):
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there.", "weight": 0},
            {"role": "user", "content": "Order 7?"}, {"role": "assistant", "content": "Shipped.", "weight": 1}]
    [enc] = encode_chats(tokenizer, [chat], 512)
    assert trained(tokenizer, enc) == "Shipped.</s>"


def test_plain_prompt_completion_trains_the_completion_and_eos_without_a_chat_template(tokenizer):
    [enc] = encode_plain(tokenizer, [("The capital of Portugal is", " Lisbon.")], 512)
    assert "<|user|>" not in tokenizer.decode(enc.input_ids)
    assert trained(tokenizer, enc).strip() == "Lisbon.</s>"


def test_loss_on_all_trains_every_token_of_a_conversation(tokenizer):
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    [replies, everything] = encode_chats(tokenizer, [chat, chat], 512, train_all=[False, True])
    assert replies.trainable_tokens < everything.trainable_tokens == len(everything.input_ids)


@pytest.mark.parametrize(("name", "words"), [
    ("sharegpt.jsonl", "101."), ("alpaca.json", "La bibliothèque"), ("prompt_completion_chat.jsonl", "12."),
    ("openai_tools.jsonl", "Tomorrow in Lisbon"), ("sharegpt.parquet", "25."),
])
def test_the_token_audit_reads_every_format_and_trains_its_replies(tokenizer, name, words):
    out = FindingCollector("mini-run")
    stats, audited = audit_split(FORMATS / name, name, tokenizer, 512, out)
    assert out.kept == [] and stats["zero_trainable"] == 0 and stats["records"] == len(audited) >= 2
    assert any(words in trained(tokenizer, a.encoded) for a in audited)


def test_a_trl_prompt_is_masked_even_its_earlier_reply(tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split(FORMATS / "prompt_completion_chat.jsonl", "pc", tokenizer, 512, out, loss_on="all")
    second = trained(tokenizer, audited[1].encoded)
    assert second == "12.</s>"  # "4." sits in the prompt: context, never a target, whatever loss_on says


def test_plain_prompt_completion_files_are_audited_as_plain_text(tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split(FORMATS / "prompt_completion.jsonl", "pc", tokenizer, 512, out)
    assert [trained(tokenizer, a.encoded).strip() for a in audited] == ["Lisbon.</s>", "144</s>"]
