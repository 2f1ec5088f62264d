"""One conversion for the whole pipeline: records of any format reach overlap, fingerprints, the
estimate and the mini-run as the same chats."""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from tunegate.cli.main import main
from tunegate.gate import check

CONFIG_DATA = DATA / "configs" / "data"


def test_a_validation_chat_repeated_from_a_sharegpt_train_file_is_overlap(tmp_path):
    # The same chat, once as ShareGPT (train) and once as OpenAI chat (validation): one record.
    first = json.loads((CONFIG_DATA / "train.jsonl").read_text().splitlines()[3])
    val = tmp_path / "val.jsonl"
    val.write_text((CONFIG_DATA / "val.jsonl").read_text() + json.dumps(first) + "\n")
    report = check(None, train=CONFIG_DATA / "sharegpt_train.jsonl", validation=val)
    [leak] = [f for f in report.findings if f.code == "TG301"]
    assert leak.file.endswith("val.jsonl") and leak.line == 13
    assert report.stage("dataset").stats["train"]["format"] == "sharegpt"
    assert report.stage("dataset").stats["validation"]["format"] == "messages"


def test_the_fingerprint_and_content_of_a_sharegpt_split_equal_its_openai_form():
    sharegpt = check(None, train=CONFIG_DATA / "sharegpt_train.jsonl", validation=CONFIG_DATA / "sharegpt_val.jsonl")
    openai = check(None, train=CONFIG_DATA / "train.jsonl", validation=CONFIG_DATA / "val.jsonl")
    for role in ("train", "validation"):
        assert sharegpt.fingerprints[role]["digest"] == openai.fingerprints[role]["digest"]
        assert sharegpt.facts.content[role] == openai.facts.content[role]


def test_the_cli_takes_the_format_and_the_config_kind(capsys):
    assert main(["check", "--train", str(CONFIG_DATA / "sharegpt_train.jsonl"), "--data-format", "alpaca",
                 "--json"]) == 1
    assert {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]} == {"TG260"}
    assert main(["check", str(DATA / "configs" / "trl" / "sft.yaml"), "--from", "trl", "--json"]) == 0


@pytest.mark.slow
def test_the_mini_run_trains_a_sharegpt_config_through_the_same_chats(tiny_cache, tmp_path):
    body = (DATA / "configs" / "axolotl" / "qlora-sharegpt.yml").read_text()
    body = body.replace("meta-llama/Llama-3.1-8B", "tunegate/tiny-llama").replace("../data", str(CONFIG_DATA))
    body = body.replace("sequence_len: 4096", "sequence_len: 512").replace("load_in_4bit: true", "load_in_4bit: false")
    body = body.replace("adapter: qlora", "adapter: lora").replace("paged_adamw_8bit", "adamw_torch")
    (tmp_path / "cfg.yml").write_text(body + "max_steps: 4\n")
    report = check(tmp_path / "cfg.yml", mini_run=True)
    assert report.stage("mini-run").status == "passed", [f"{f.code} {f.message}" for f in report.findings]
    assert report.stage("mini-run").stats["token_audit"]["train"]["records"] == 40
    assert report.facts.tokens.records == 40
