"""The dataset stage on records in the shapes public datasets and tools write (tests/data/realworld)."""
from __future__ import annotations

import json
import re

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.records import iter_chats

REAL = DATA / "realworld"
README = (REAL / "README.md").read_text(encoding="utf-8")
ACCEPTED = [name for cell in re.findall(r"^\| (\S+\.jsonl?(?:\.gz)?(?: \(\.jsonl\.gz\))?(?:, \S+)?) \| [^|]+ \|$",
                                         README, re.M)
            for name in re.findall(r"\S+\.json\S*", cell.replace("(.jsonl.gz)", "sharegpt_fastchat.jsonl.gz"))]
REFUSED = re.findall(r"^\| (\S+\.jsonl) \| (\d+:\d+) \| ([^|]+) \| [^|]+ \|$", README, re.M)


def test_readme_lists_every_file():
    listed = {n.rstrip(",") for n in ACCEPTED} | {r[0] for r in REFUSED}
    assert listed == {p.name for p in REAL.iterdir() if p.suffix != ".md" and p.suffix != ".py"}


@pytest.mark.parametrize("name", sorted({n.rstrip(",") for n in ACCEPTED}))
def test_real_world_shape_passes_with_no_finding(name):
    result = validate_dataset({"train": REAL / name}, cap=50)
    assert [f"{f.place()} {f.code} {f.message}" for f in result.findings] == []
    assert result.status == "passed" and result.stats["train"]["records"] == 12


@pytest.mark.parametrize(("name", "place", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_type_that_is_not_fine_tuning_data_is_named_at_its_place(name, place, words):
    result = validate_dataset({"train": REAL / name}, cap=50)
    assert {f.code for f in result.findings} == {"TG271"} and result.status == "failed"
    first = result.findings[0]
    assert first.place() == f"{REAL / name}:{place}"
    assert words.strip() in first.message and "tunegate" in first.message + first.hint and first.hint


def test_only_the_kto_records_labelled_undesirable_are_refused():
    lines = [f.line for f in validate_dataset({"train": REAL / "kto.jsonl"}, cap=50).findings]
    assert lines == [2, 4, 6, 8, 10, 12]


def test_sharegpt_weight_zero_masks_the_reply_in_the_chat_form():
    chat = next(iter_chats(REAL / "sharegpt_slimorca.jsonl"))
    assert [(m["role"], m.get("weight")) for m in chat.messages] == [("system", None), ("user", None),
                                                                       ("assistant", 1)]


def test_sharegpt_every_reply_weight_zero_is_nothing_trained(tmp_path):
    record = {"conversations": [{"from": "human", "value": "Hi", "weight": 0.0},
                                {"from": "gpt", "value": "Hello!", "weight": 0.0}]}
    path = tmp_path / "all_zero.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(record | {"id": 2}) + "\n")
    assert {f.code for f in validate_dataset({"train": path}).findings} == {"TG265"}


def test_llama_factory_function_call_becomes_an_openai_tool_call():
    chat = next(iter_chats(REAL / "sharegpt_glaive_toolcall.jsonl"))
    call = chat.messages[1]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"] == {
        "name": "get_weather", "arguments": {"city": "Lisbon"}}
    assert [m["role"] for m in chat.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_function_call_that_is_not_json_is_a_malformed_call(tmp_path):
    record = {"conversations": [{"from": "human", "value": "Rain in Oslo?"},
                                {"from": "function_call", "value": "get_weather(city='Oslo')"},
                                {"from": "observation", "value": "rain"}, {"from": "gpt", "value": "Yes."}]}
    path = tmp_path / "call.jsonl"
    path.write_text(json.dumps(record) + "\n")
    found = validate_dataset({"train": path}).findings
    assert [(f.code, f.column) for f in found] == [("TG262", 100)] and "function_call" in found[0].message


def test_a_tool_reply_named_for_a_function_nobody_called_is_refused(tmp_path):
    record = json.loads((REAL / "openai_trl_tools.jsonl").read_text().splitlines()[0])
    record["messages"][2]["name"] = "get_time"
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(record) + "\n")
    found = validate_dataset({"train": path}).findings
    assert [f.code for f in found] == ["TG263"] and "'get_time'" in found[0].message
