"""The token audit in bounded memory: records judged as they are encoded, their tokens let go.

`tunegate samples` audits with `keep_tokens=False` (each record keeps its counts) and encodes the
records it shows again; a sample of long records kept as token lists took ~50 bytes a token
(1,088 MB for 25,000 records of ~1,000 tokens).
"""
from __future__ import annotations

import copy

import pytest

from tests.support.minirun import DATA
from tests.support.paths import DATA as TEST_DATA
from tunegate.dataset.records import ChatRecord
from tunegate.report import FindingCollector
from tunegate.training import token_audit
from tunegate.training.chat_tokens import TokenCounts
from tunegate.training.token_audit import audit_split, encoded_again

TEMPLATES = DATA / "templates"
REALWORLD = TEST_DATA / "realworld"
# (data file, template or None for the tiny model's own, max_seq_len, loss_on): every check over a split
CASES = [
    (DATA / "train.jsonl", "no_eos.jinja", 512, "replies"),             # TG539
    (DATA / "train.jsonl", "double_bos.jinja", 512, "replies"),         # TG541
    (DATA / "train_reasoning_field.jsonl", "reasoning_dropped.jinja", 512, "replies"),  # TG548
    (REALWORLD / "openai_tools.jsonl", "no_tools.jinja", 4096, "replies"),  # TG543, TG544
    (DATA / "train_weighted.jsonl", None, 256, "all"),                  # TG542
    (DATA / "train_long_user.jsonl", None, 48, "replies"),              # TG510, TG511, TG512
    (DATA / "train.jsonl", "system_raises.jinja", 512, "replies"),      # TG530
]


def audit(tokenizer, path, template, max_seq_len, loss_on, **kwargs):
    rendering = copy.deepcopy(tokenizer)
    if template:  # double_bos writes a BOS of its own after one written before it
        extra = "{{ bos_token }}" if template == "double_bos.jinja" else ""
        rendering.chat_template = extra + (TEMPLATES / template).read_text()
    out = FindingCollector("mini-run", cap=2)
    stats, audited = audit_split(path, path.name, rendering, max_seq_len, out, loss_on=loss_on, **kwargs)
    return rendering, out, stats, audited


@pytest.mark.parametrize(("path", "template", "max_seq_len", "loss_on"), CASES,
                         ids=[f"{p.stem}-{t}" for p, t, _, _ in CASES])
def test_an_audit_that_lets_tokens_go_finds_and_counts_what_one_keeping_them_does(tokenizer, path, template,
                                                                                  max_seq_len, loss_on):
    _, kept_out, kept_stats, kept = audit(tokenizer, path, template, max_seq_len, loss_on)
    _, light_out, light_stats, light = audit(tokenizer, path, template, max_seq_len, loss_on, keep_tokens=False)
    assert kept_out.kept  # each case has something to find
    assert [f.model_dump() for f in light_out.kept] == [f.model_dump() for f in kept_out.kept]
    assert light_out.totals == kept_out.totals and light_stats == kept_stats
    assert all(isinstance(a.encoded, TokenCounts) for a in light if a.encoded is not None)
    assert [a.encoded for a in light] == [a.encoded and a.encoded.counts() for a in kept]


def test_findings_judged_batch_by_batch_are_those_of_one_batch(tokenizer, monkeypatch):
    """Split-wide checks count across batches and name the first record: batches of 2 say what one batch says."""
    path, template = DATA / "train.jsonl", "no_eos.jinja"
    _, whole, _, _ = audit(tokenizer, path, template, 512, "replies")
    monkeypatch.setattr(token_audit, "BATCH", 2)
    _, batched, _, _ = audit(tokenizer, path, template, 512, "replies", keep_tokens=False)
    assert [f.model_dump() for f in batched.kept] == [f.model_dump() for f in whole.kept]


def test_records_encoded_again_alone_are_exactly_the_ones_the_audit_encoded_in_its_batches(tokenizer):
    """A record's encoding depends on it alone: the weighted record's batch-mate, encoded again on its own,
    takes the same way and gets the same tokens and labels."""
    rendering, _, _, kept = audit(tokenizer, DATA / "train_weighted.jsonl", None, 256, "replies")
    _, _, _, light = audit(tokenizer, DATA / "train_weighted.jsonl", None, 256, "replies", keep_tokens=False)
    for i, item in enumerate(light):
        [again] = encoded_again([item], rendering, 256)
        assert again.encoded == kept[i].encoded


def test_a_record_takes_the_same_way_in_any_batch(tokenizer):
    from tunegate.training.chat_tokens import encode_chats

    weighted = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello.", "weight": 0},
                {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Bye."}]
    plain = [{"role": "user", "content": "How are you?"}, {"role": "assistant", "content": "Fine."}]
    together = encode_chats(tokenizer, [weighted, plain], 64)
    assert together == encode_chats(tokenizer, [weighted], 64) + encode_chats(tokenizer, [plain], 64)


def record(index: int, chars: int) -> ChatRecord:
    return ChatRecord(line=index + 1, index=index, messages=[{"role": "user", "content": "x" * chars}])


def test_a_batch_holds_at_most_its_characters_and_always_one_record(monkeypatch):
    monkeypatch.setattr(token_audit, "BATCH_CHARS", 100)
    records = [record(0, 30), record(1, 30), record(2, 30), record(3, 30), record(4, 500), record(5, 10)]
    batches = [[r.index for r in batch] for batch in token_audit._batches(records)]
    assert batches == [[0, 1, 2], [3], [4], [5]]


def test_a_batch_holds_at_most_batch_records(monkeypatch):
    monkeypatch.setattr(token_audit, "BATCH", 2)
    assert [len(b) for b in token_audit._batches([record(i, 1) for i in range(5)])] == [2, 2, 1]
