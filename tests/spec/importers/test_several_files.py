"""A config whose split is several files (datasets the tool concatenates, a dataset's shards) is read as
the tool reads it: every file, in order, as one split.

    tunegate check tests/data/configs/axolotl/lora-two-datasets.yml   # two `datasets` entries
    tunegate check tests/data/configs/trl/sft-mixture-two.yaml        # a `datasets` mixture of two
"""
from __future__ import annotations

import shutil

from tests.support.paths import DATA
from tunegate.dataset.fingerprint import fingerprint_file
from tunegate.gate import check
from tunegate.spec.check import parse_spec

CONFIGS = DATA / "configs"
AXOLOTL, TRL, SHARDS = CONFIGS / "axolotl", CONFIGS / "trl", CONFIGS / "data" / "pc_parquet_shards"


def places(report):
    return [f"{f.place()} {f.code}" for f in report.findings]


def test_two_axolotl_datasets_are_one_training_split_of_both_files_in_order():
    parsed = parse_spec(AXOLOTL / "lora-two-datasets.yml")
    data = CONFIGS / "data"
    assert parsed.raw["data"]["train"] == [str(data / "train.jsonl"), str(data / "train_more.jsonl")]
    assert parsed.raw["data"]["format"] == "messages"
    report = check(parsed)
    assert report.gates_passed, places(report)
    stats = report.stage("dataset").stats["train"]
    assert stats["records"] == 40 + 45 and [s["records"] for s in stats["files"]] == [40, 45]
    assert report.fingerprints["train"]["files"] == [str(data / "train.jsonl"), str(data / "train_more.jsonl")]


def _two_formats(tmp_path):
    body = (AXOLOTL / "lora-two-datasets.yml").read_text().replace("../data", str(CONFIGS / "data"))
    body = body.replace("  - path: " + str(CONFIGS / "data" / "train_more.jsonl") + "\n    type: chat_template\n",
                        "  - path: " + str(CONFIGS / "data" / "alpaca_train.jsonl") + "\n    type: alpaca\n")
    (tmp_path / "cfg.yml").write_text(body)
    return tmp_path / "cfg.yml"


def test_axolotl_datasets_of_two_formats_leave_the_split_unread_here_at_the_second(tmp_path):
    parsed = parse_spec(_two_formats(tmp_path))
    assert "TG145" not in {f.code for f in parsed.result.findings}  # no reason axolotl refuses the config
    finding = parsed.unavailable["train"]
    assert (finding.code, finding.key) == ("TG145", "datasets.1.type")
    assert finding.message.startswith("datasets.1 is alpaca but datasets.0 is messages: axolotl tokenises each")


def test_axolotl_datasets_of_two_formats_fail_the_gate_and_pass_for_axolotl(tmp_path):
    report = check(parse_spec(_two_formats(tmp_path)))
    assert not report.gates_passed and not report.approved_for_full_run
    assert report.config_trainer is not None and report.config_trainer.passed
    assert "TG145" in {f.code for f in report.stage("dataset").findings}


def test_axolotl_test_datasets_in_another_format_leave_validation_unread_here(tmp_path):
    body = (AXOLOTL / "lora-two-datasets.yml").read_text().replace("../data", str(CONFIGS / "data"))
    body = body.replace("  - path: " + str(CONFIGS / "data" / "val.jsonl") + "\n    type: chat_template\n",
                        "  - path: " + str(CONFIGS / "data" / "alpaca_val.jsonl") + "\n    type: alpaca\n")
    (tmp_path / "cfg.yml").write_text(body)
    parsed = parse_spec(tmp_path / "cfg.yml")
    assert set(parsed.unavailable) == {"validation"} and parsed.unavailable["validation"].key == "test_datasets.0.type"
    report = check(parsed)
    assert report.stage("dataset").stats["train"]["records"] == 40 + 45  # train is still read and checked
    assert report.config_trainer.passed and not report.gates_passed


def test_a_trl_mixture_of_two_datasets_is_its_train_split_of_both():
    parsed = parse_spec(TRL / "sft-mixture-two.yaml")
    assert parsed.raw["data"]["train"] == [str(CONFIGS / "data" / "trl_support" / "train.jsonl"),
                                           str(SHARDS / "data" / "test-00000-of-00001.parquet")]
    assert {f.code for f in parsed.unavailable.values()} == {"TG143"}  # a mixture has no test split
    report = check(parsed)
    assert report.stage("dataset").stats["train"]["records"] == 40 + 12
    assert "TG146" not in {f.code for f in report.findings}


def test_a_folder_whose_split_is_in_parquet_shards_is_read_as_load_dataset_reads_it(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text((TRL / "sft.yaml").read_text().replace("../data/trl_support", str(SHARDS)))
    parsed = parse_spec(config)
    assert parsed.raw["data"]["train"] == [str(SHARDS / "data" / f"train-0000{n}-of-00002.parquet") for n in (0, 1)]
    report = check(parsed)
    assert report.stage("dataset").status == "passed", places(report)
    # the shards hold the records of trl_support/train.jsonl: the same split, the same digest
    assert report.fingerprints["train"]["digest"] == fingerprint_file(
        CONFIGS / "data" / "trl_support" / "train.jsonl").digest
    assert report.stage("dataset").stats["validation"]["records"] == 12


def test_a_hub_dataset_sharded_in_the_local_hub_cache_is_read_from_every_shard(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "datasets--acme--support-chats" / "snapshots" / "0123abc"
    shutil.copytree(SHARDS, snapshot)
    config = tmp_path / "sft.yaml"
    config.write_text((TRL / "sft.yaml").read_text().replace("../data/trl_support", "acme/support-chats"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    report = check(config)
    assert report.gates_passed, places(report)
    told = [f.message for f in report.findings if f.code == "TG148"]
    assert len(told) == 2 and told[0].endswith("train-00000-of-00002.parquet and 1 more shard(s)")
    assert report.stage("dataset").stats["train"]["records"] == 40
