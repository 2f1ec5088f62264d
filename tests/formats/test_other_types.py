"""Data that is not supervised fine-tuning data is named for what it is, in every tool's layout.

LLaMA-Factory's published demo files (copies in tests/data/configs/llamafactory/data, sources in its
README): preference pairs, KTO feedback, image-text records and pre-training text each get their own
verdict, and its SFT files pass; small records in other tools' layouts pin the same rules.
"""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset

LF_DATA = DATA / "configs" / "llamafactory" / "data"
CHAT = [{"role": "user", "content": "Name a prime above 100."}, {"role": "assistant", "content": "101."}]
SHAREGPT = [{"from": "human", "value": "Name a prime above 100."}, {"from": "gpt", "value": "101."}]


def findings(path):
    result = validate_dataset({"train": path}, cap=50)
    return [(f.code, f.severity, f.line, f.column, f.message) for f in result.findings]


def jsonl(tmp_path, *records):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_llamafactory_preference_pairs_are_named_not_taken_for_an_unfinished_conversation():
    found = findings(LF_DATA / "dpo_en_demo.json")
    assert [(code, line, column) for code, _, line, column, _ in found] == [("TG271", 9, 15), ("TG271", 25, 15),
                                                                           ("TG271", 41, 15)]
    assert "preference data ('conversations'/'chosen'/'rejected'" in found[0][4]


def test_llamafactory_kto_feedback_is_refused_where_a_reply_is_labelled_undesirable():
    found = findings(LF_DATA / "kto_en_demo.json")
    assert [(code, line) for code, _, line, _, _ in found] == [("TG271", 13), ("TG271", 39), ("TG271", 52)]
    assert "KTO: 'label' false marks the last reply as undesirable" in found[0][4]


def test_llamafactory_image_text_records_are_named_multimodal():
    found = findings(LF_DATA / "mllm_demo.json")
    assert [(code, severity, line, column) for code, severity, line, column, _ in found] == [
        ("TG272", "error", 21, 15), ("TG272", "error", 45, 15), ("TG272", "error", 68, 15)]
    assert "record is multimodal ('images': 2 item(s)" in found[0][4]


def test_llamafactory_pretraining_text_is_named_language_modeling_text():
    assert {(code, msg.split(" (")[0]) for code, _, _, _, msg in findings(LF_DATA / "c4_demo.jsonl")} == {
        ("TG271", "record is language-modeling text")}


@pytest.mark.parametrize("name", ["alpaca_en_demo.json", "alpaca_en_demo_heldout.json", "glaive_toolcall_en_demo.json"])
def test_llamafactory_sft_files_pass(name):
    assert findings(LF_DATA / name) == []


@pytest.mark.parametrize(("record", "code", "words"), [
    ({"messages": CHAT[:1], "chosen": CHAT[1], "rejected": {"role": "assistant", "content": "97."}}, "TG271",
     "'messages'/'chosen'/'rejected'"),
    ({"instruction": "Name a prime.", "input": "", "output": "101.", "kto_tag": False}, "TG271",
     "'kto_tag' false marks the output"),
    ({"conversations": SHAREGPT, "label": False}, "TG271", "'label' false marks the last reply"),
    ({"id": "1", "image": "coco/000000033471.jpg", "conversations": SHAREGPT}, "TG272", "('image': one item"),
    ({"messages": CHAT, "videos": ["clip.mp4"]}, "TG272", "('videos': 1 item(s)"),
])
def test_each_tools_layout_of_another_type_of_data_is_named(tmp_path, record, code, words):
    [(found, severity, _, _, message)] = findings(jsonl(tmp_path, record))
    assert (found, severity) == (code, "error") and words in message


@pytest.mark.parametrize("record", [
    {"prompt": "Name a prime above 100.", "prompt_id": "a1", "messages": CHAT},  # HuggingFaceH4/ultrachat_200k
    {"messages": CHAT, "text": "<|user|>Name a prime above 100.<|assistant|>101."},  # a rendered copy beside it
    {"messages": CHAT, "images": []},  # no media: LLaMA-Factory reads an empty list as none
    {"conversations": SHAREGPT, "label": True},  # KTO's desirable answers are fine-tuning examples
])
def test_a_chat_record_with_such_keys_beside_its_example_is_still_sft_data(tmp_path, record):
    assert findings(jsonl(tmp_path, record)) == []


def test_a_media_placeholder_in_a_text_record_is_a_warning_at_its_text(tmp_path):
    record = {"messages": [{"role": "user", "content": "<image>What is in the picture?"}, CHAT[1]]}
    [(code, severity, line, column, message)] = findings(jsonl(tmp_path, record))
    assert (code, severity, column) == ("TG269", "warning", 43) and "<image>" in message


@pytest.mark.parametrize("record", [
    {"messages": [{"role": "user", "content": "Embed a clip with `<video>`?"}, CHAT[1]]},
    {"instruction": "Write the tag.", "output": "```html\n<audio>\n```"},
])
def test_a_media_tag_written_as_code_is_no_placeholder(tmp_path, record):
    assert findings(jsonl(tmp_path, record)) == []
