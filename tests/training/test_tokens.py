"""Tokenisation as the full run does it, and the token audit over a whole split."""
from __future__ import annotations

import copy

import pytest

from tests.support.minirun import DATA
from tests.support.paths import DATA as TEST_DATA
from tunegate.dataset.records import read_chats
from tunegate.report import FindingCollector
from tunegate.training.chat_tokens import IGNORE, collate, encode_chats, eos_labels_lost_to_pad, substitute_pad_token
from tunegate.training.token_audit import audit_split, token_facts

REALWORLD = TEST_DATA / "realworld"
CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How do I reset my password?"},
        {"role": "assistant", "content": "Open Settings."},
        {"role": "user", "content": "And then?"},
        {"role": "assistant", "content": "Press Reset."}]


def trained_text(tokenizer, encoded) -> str:
    return tokenizer.decode([t for t in encoded.labels if t != IGNORE])


def test_only_assistant_replies_and_their_eos_carry_labels(tokenizer):
    [enc] = encode_chats(tokenizer, [CHAT], max_seq_len=512)
    assert trained_text(tokenizer, enc) == "Open Settings.</s>Press Reset.</s>"
    assert enc.trainable_tokens == sum(1 for t in enc.labels if t != IGNORE)
    assert not enc.final_reply_cut and enc.full_length == len(enc.input_ids)


def test_templates_without_generation_markers_get_the_same_labels(tokenizer):
    plain = copy.deepcopy(tokenizer)
    # (the newline after the end marker is eaten by jinja's trim_blocks, so it goes too: same text)
    plain.chat_template = tokenizer.chat_template.replace("{% generation %}", "").replace("{% endgeneration %}\n", "")
    assert plain.apply_chat_template(CHAT, tokenize=False) == tokenizer.apply_chat_template(CHAT, tokenize=False)
    marked = encode_chats(tokenizer, [CHAT, CHAT[:3]], max_seq_len=512)
    by_prefix = encode_chats(plain, [CHAT, CHAT[:3]], max_seq_len=512)
    assert [e.labels for e in by_prefix] == [e.labels for e in marked]


def test_truncation_keeps_the_full_length_and_flags_a_cut_final_reply(tokenizer):
    [full] = encode_chats(tokenizer, [CHAT], max_seq_len=512)
    [cut] = encode_chats(tokenizer, [CHAT], max_seq_len=full.full_length - 2)
    assert cut.full_length == full.full_length
    assert len(cut.input_ids) == full.full_length - 2
    assert cut.final_reply_cut and 0 < cut.trainable_tokens < full.trainable_tokens


def test_a_reply_past_max_seq_len_leaves_zero_trainable_tokens(tokenizer):
    [enc] = encode_chats(tokenizer, [CHAT[:3]], max_seq_len=8)
    assert enc.trainable_tokens == 0
    assert enc.first_reply_token >= 8


def test_a_missing_pad_token_is_replaced_by_unk_and_said(tokenizer):
    tokenizer.pad_token = None
    assert substitute_pad_token(tokenizer) == "unk token '<unk>'"
    assert tokenizer.pad_token == "<unk>"
    assert substitute_pad_token(tokenizer) is None  # has one now: nothing to say


def test_pad_equal_to_eos_would_lose_every_reply_end_to_a_pad_masking_collator(tokenizer):
    encoded = encode_chats(tokenizer, [CHAT, CHAT[:3]], max_seq_len=512)
    assert eos_labels_lost_to_pad(encoded, tokenizer.pad_token_id) == 0
    assert eos_labels_lost_to_pad(encoded, tokenizer.eos_token_id) == 3


def test_collate_masks_padding_by_position_so_eos_as_pad_keeps_its_label(tokenizer):
    short, long = encode_chats(tokenizer, [CHAT[:3], CHAT], max_seq_len=512)
    batch = collate([short, long], pad_id=tokenizer.eos_token_id)
    n = len(short.input_ids)
    assert batch["labels"][0, n - 1].item() == tokenizer.eos_token_id  # the reply's EOS is still trained
    assert (batch["labels"][0, n:] == IGNORE).all() and (batch["attention_mask"][0, n:] == 0).all()
    assert (batch["input_ids"][0, n:] == tokenizer.eos_token_id).all()


def test_audit_counts_lengths_and_feeds_the_estimate(tokenizer):
    out = FindingCollector("mini-run")
    stats, audited = audit_split(DATA / "train.jsonl", "train.jsonl", tokenizer, 256, out)
    assert not out.kept
    assert stats["records"] == stats["audited"] == len(audited) == 12 and not stats["sampled"]
    assert stats["tokens_min"] <= stats["tokens_p50"] <= stats["tokens_p90"] <= stats["tokens_max"]
    assert stats["train_tokens"] == sum(len(a.encoded.input_ids) for a in audited)
    facts = token_facts(stats)
    assert facts.records == 12 and facts.trainable_tokens < facts.train_tokens
    assert facts.mean_tokens_per_record == pytest.approx(stats["train_tokens"] / 12, abs=0.01)


def test_audit_names_the_record_left_without_trainable_tokens(tokenizer):
    out = FindingCollector("mini-run")
    stats, _ = audit_split(DATA / "train_long_user.jsonl", "train_long_user.jsonl", tokenizer, 128, out)
    [zero] = [f for f in out.kept if f.code == "TG510"]
    assert (zero.file, zero.line, zero.record, zero.severity) == ("train_long_user.jsonl", 3, 2, "error")
    assert "max_seq_len 128" in zero.message
    assert stats["zero_trainable"] == 1 and stats["over_max_seq_len"] == 1


def test_audit_warns_about_truncated_records_and_cut_final_replies(tokenizer):
    out = FindingCollector("mini-run")
    # max_seq_len 50 cuts all records but one, yet every first reply starts before token 44
    stats, _ = audit_split(DATA / "train.jsonl", "train.jsonl", tokenizer, 50, out)
    found = {f.code for f in out.kept}
    assert {"TG511", "TG512"} <= found and "TG510" not in found
    assert stats["over_max_seq_len"] == out.totals["TG511"] > 0


def test_audit_rejects_a_record_of_zero_characters(tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split(DATA / "train_empty_content.jsonl", "t.jsonl", tokenizer, 256, out)
    [empty] = out.kept
    assert (empty.code, empty.line, empty.severity) == ("TG502", 2, "error")
    assert [a.usable for a in audited] == [True, False, True]


def test_audit_samples_a_large_split_and_says_so(tokenizer):
    out = FindingCollector("mini-run")
    stats, audited = audit_split(DATA / "train.jsonl", "train.jsonl", tokenizer, 256, out, limit=5)
    assert stats["sampled"] and stats["records"] == 12 and len(audited) == 5
    assert [f.code for f in out.kept] == ["TG531"]
    assert stats["train_tokens"] == round(sum(len(a.encoded.input_ids) for a in audited) * 12 / 5)


def test_reservoir_sample_is_uniform_in_index_order_and_repeatable():
    first = read_chats(DATA / "train.jsonl", limit=5, seed=3)
    again = read_chats(DATA / "train.jsonl", limit=5, seed=3)
    assert [r.line for r in first.records] == [r.line for r in again.records]
    assert [r.index for r in first.records] == sorted(r.index for r in first.records)


def test_a_template_that_rejects_a_record_is_reported_at_its_line(tokenizer):
    strict = copy.deepcopy(tokenizer)
    strict.chat_template = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
                            "supported') }}{% endif %}" + tokenizer.chat_template)
    out = FindingCollector("mini-run")
    _, audited = audit_split(DATA / "train.jsonl", "train.jsonl", strict, 256, out)
    rejected = [f for f in out.kept if f.code == "TG530"]
    assert [f.line for f in rejected] == [1, 4, 7, 10]  # every third record has a system message
    assert "System role not supported" in rejected[0].message
    assert sum(a.usable for a in audited) == 8


# A template in the manner of Qwen 2.5's and Llama 3.1's: the tool schemas go into the first turn.
TOOLS_FIRST = ("{% if tools %}<|system|>\nTools:{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}<|end|>\n"
               "{% endif %}")
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.",
                                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture
def tool_tokenizer(tokenizer):
    rendering = copy.deepcopy(tokenizer)
    rendering.chat_template = tokenizer.chat_template.replace("{{ bos_token }}", "{{ bos_token }}" + TOOLS_FIRST)
    return rendering


def test_a_records_tools_are_rendered_with_it_and_take_tokens_but_no_labels(tool_tokenizer):
    [bare, with_tools] = encode_chats(tool_tokenizer, [CHAT, CHAT], max_seq_len=512, tools=[None, WEATHER])
    assert "get_weather" in tool_tokenizer.decode(with_tools.input_ids)
    assert "get_weather" not in tool_tokenizer.decode(bare.input_ids)
    assert with_tools.full_length > bare.full_length
    assert trained_text(tool_tokenizer, with_tools) == trained_text(tool_tokenizer, bare) == \
        "Open Settings.</s>Press Reset.</s>"


def test_tools_count_towards_the_length_truncation_is_judged_by(tool_tokenizer):
    [bare] = encode_chats(tool_tokenizer, [CHAT], max_seq_len=512)
    [cut] = encode_chats(tool_tokenizer, [CHAT], max_seq_len=bare.full_length, tools=[WEATHER])
    assert cut.final_reply_cut and not encode_chats(tool_tokenizer, [CHAT], max_seq_len=bare.full_length)[0].final_reply_cut


def test_chat_records_carry_their_tools_as_schemas_also_when_written_as_json_text():
    openai = read_chats(REALWORLD / "openai_tools.jsonl").records
    glaive = read_chats(REALWORLD / "sharegpt_glaive_toolcall.jsonl").records
    assert openai[0].tools[0]["function"]["name"] == "get_weather"
    assert glaive[0].tools[0]["name"] == "get_weather"  # LLaMA-Factory's `tools` column is JSON text
    assert read_chats(DATA / "train.jsonl").records[0].tools is None


def test_the_audit_renders_each_records_tools(tool_tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split(REALWORLD / "openai_tools.jsonl", "openai_tools.jsonl", tool_tokenizer, 4096, out)
    first = audited[0].encoded
    assert "Current weather for a city." in tool_tokenizer.decode(first.input_ids)


def test_loss_on_all_says_it_trains_the_replies_weighted_zero(tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split(DATA / "train_weighted.jsonl", "train_weighted.jsonl", tokenizer, 256, out, loss_on="all")
    [ignored] = out.kept
    assert (ignored.code, ignored.severity, ignored.line, ignored.key) == ("TG542", "warning", 1, "training.loss_on")
    assert ignored.message.startswith("1 of 2 records have replies with weight: 0")
    assert all(a.encoded.trainable_tokens == len(a.encoded.input_ids) for a in audited)  # every token trained


def test_loss_on_replies_masks_a_reply_weighted_zero_and_says_nothing(tokenizer):
    out = FindingCollector("mini-run")
    _, audited = audit_split(DATA / "train_weighted.jsonl", "train_weighted.jsonl", tokenizer, 256, out)
    assert not out.kept
    assert "Ask support" not in trained_text(tokenizer, audited[0].encoded)


def test_a_reply_ending_exactly_at_max_seq_len_is_whole_and_one_token_less_loses_its_eos(tokenizer):
    [full] = encode_chats(tokenizer, [CHAT[:3]], max_seq_len=512)
    [exact] = encode_chats(tokenizer, [CHAT[:3]], max_seq_len=full.full_length)
    [short] = encode_chats(tokenizer, [CHAT[:3]], max_seq_len=full.full_length - 1)
    assert not exact.final_reply_cut and exact.labels == full.labels
    assert short.final_reply_cut and trained_text(tokenizer, short) == "Open Settings."  # the EOS is what went
