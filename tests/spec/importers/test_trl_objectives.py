"""Which `trl` command a TRL config is for, read as TRL reads it: `trl sft` unless the config sets keys only
another command's config has (DPO, KTO, reward, GRPO, RLOO), or, setting neither those nor keys only `trl sft`
reads, its training data's first record is preference data (`trl dpo`, `trl reward`) or unpaired preference
data (`trl kto`). Another objective fails the gate (TG147) and is no reason its own trainer refuses the run;
a config that is `trl sft`'s still has SFTTrainer's refusal of preference pairs (TG271).

The configs and the records are published copies (tests/data/configs/published/README.md names each source).
"""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.gate import check

PUBLISHED = DATA / "configs" / "published"
PAIRS = (PUBLISHED / "data" / "trl_preference_train.jsonl", PUBLISHED / "data" / "trl_preference_validation.jsonl")
UNPAIRED = (PUBLISHED / "data" / "trl_unpaired_preference_train.jsonl",
            PUBLISHED / "data" / "trl_unpaired_preference_validation.jsonl")
CHATS = (PUBLISHED / "data" / "glaive_chat_train.jsonl", PUBLISHED / "data" / "glaive_chat_validation.jsonl")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(PUBLISHED / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def objective(report):
    return [f for f in report.findings if f.code == "TG147" and f.severity == "error"]


def test_keys_only_trl_dpo_reads_make_the_config_trl_dpos_not_a_trl_sft_refusal():
    report = check(PUBLISHED / "trl" / "cli-dpo-loss-weights.yaml")
    [other] = objective(report)
    assert other.key == "loss_weights" and other.stage == "spec" and "trl dpo" in other.message
    assert report.config_trainer.trainer == "trl dpo" and report.config_trainer.passed, report.config_trainer.reasons
    assert not report.tunegate_launch.passed and not report.approved_for_full_run


def test_preference_pairs_make_a_config_that_says_nothing_else_trl_dpos_or_trl_rewards():
    report = check(PUBLISHED / "trl" / "clis-dpo.yaml", train=PAIRS[0], validation=PAIRS[1])
    [other] = objective(report)
    assert other.key == "dataset_name" and "'prompt'/'chosen'/'rejected'" in other.message
    assert report.config_trainer.trainer == "trl dpo or trl reward" and report.config_trainer.passed
    assert not report.gates_passed and not report.approved_for_full_run
    assert report.stage("dataset").status == "skipped"  # the data of another objective is not gated


def test_unpaired_preference_makes_a_config_that_says_nothing_else_trl_ktos():
    report = check(PUBLISHED / "trl" / "clis-kto.yaml", train=UNPAIRED[0], validation=UNPAIRED[1])
    [other] = objective(report)
    assert "'label'" in other.message and report.config_trainer.trainer == "trl kto"
    assert report.config_trainer.passed and not report.approved_for_full_run


def test_a_key_only_trl_kto_reads_makes_the_config_trl_ktos(tmp_path):
    config = tmp_path / "kto.yaml"
    config.write_text((PUBLISHED / "trl" / "clis-kto.yaml").read_text(encoding="utf-8") + "desirable_weight: 1.33\n",
                      encoding="utf-8")
    report = check(config, train=CHATS[0], validation=CHATS[1])
    assert [f.key for f in objective(report)] == ["desirable_weight"]
    assert report.config_trainer.trainer == "trl kto" and report.config_trainer.passed


def test_a_config_that_is_trl_sfts_still_has_sft_trainers_refusal_of_preference_pairs():
    report = check(PUBLISHED / "trl" / "lora-without-regret.yaml", train=PAIRS[0], validation=PAIRS[1])  # packing
    assert not objective(report) and report.config_trainer.trainer == "trl sft"
    assert any(" TG271 " in r for r in report.config_trainer.reasons)  # SFTTrainer stops on a pair (no 'completion')
    assert not report.config_trainer.passed


def test_a_key_of_another_command_in_a_config_that_is_trl_sfts_is_trl_sfts_refusal(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text((PUBLISHED / "trl" / "lora-without-regret.yaml").read_text(encoding="utf-8") + "beta: 0.1\n",
                      encoding="utf-8")
    report = check(config, train=CHATS[0], validation=CHATS[1])
    [refused] = [f for f in report.findings if f.code == "TG154"]
    assert refused.key == "beta" and "packing is trl sft's only" in refused.message
    assert report.config_trainer.trainer == "trl sft" and not report.config_trainer.passed


def test_a_config_that_says_nothing_on_sft_data_stays_trl_sfts():
    report = check(PUBLISHED / "trl" / "clis-dpo.yaml", train=CHATS[0], validation=CHATS[1])
    assert not objective(report) and report.config_trainer.trainer == "trl sft" and report.config_trainer.passed


def test_a_config_whose_data_is_not_here_is_read_as_it_says():
    report = check(PUBLISHED / "trl" / "clis-dpo.yaml")  # anthropic/hh-rlhf: not in the local Hub cache
    assert not objective(report) and report.config_trainer.trainer == "trl sft"
    assert [f.code for f in report.findings if f.severity == "error"] == ["TG142"]


def test_preference_pairs_gzipped_or_in_parquet_are_read_for_their_first_record(tmp_path):
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tunegate.dataset.records import iter_records

    records = [record for _, _, record in iter_records(PAIRS[0])]
    gzipped = tmp_path / "train.jsonl.gz"
    gzipped.write_bytes(gzip.compress(PAIRS[0].read_bytes()))
    table = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(records), table)
    for train in (gzipped, table):
        report = check(PUBLISHED / "trl" / "clis-dpo.yaml", train=train, validation=PAIRS[1])
        assert report.config_trainer.trainer == "trl dpo or trl reward" and [f.key for f in objective(report)] == [
            "dataset_name"]
