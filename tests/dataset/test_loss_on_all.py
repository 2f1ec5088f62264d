"""training.loss_on: all trains every token of a conversation, so a record whose every reply has
weight 0 still trains (the mini-run warns, TG542) and the data stage does not reject it (TG265).

A prompt-completion record trains its completion only, whatever loss_on says: its TG265 stands.
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import context, make_spec
from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.stage import run_stage
from tunegate.sweep.candidate_gate import changed_data_inputs

FILES = DATA / "dataset" / "loss_on_all"
CONVERSATIONS = ["openai_context_only.jsonl", "sharegpt_context_only.jsonl"]


def _stage(name: str, loss_on: str):
    spec = make_spec(data={"train": str(FILES / name), "validation": str(FILES / name)}, training={"loss_on": loss_on})
    ctx = context(spec)
    ctx.files = {"train": FILES / name}
    return run_stage(ctx)


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_a_conversation_with_every_reply_weighted_zero_is_rejected_when_only_replies_train(name):
    stage = _stage(name, "replies")
    assert [(f.code, f.line) for f in stage.findings] == [("TG265", 2)]
    assert stage.status == "failed"


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_the_same_conversation_passes_when_every_token_trains(name):
    stage = _stage(name, "all")
    assert stage.findings == [] and stage.status == "passed"


def test_a_prompt_completion_record_with_its_completion_weighted_zero_is_rejected_either_way():
    for loss_on in ("replies", "all"):
        stage = _stage("prompt_completion_weight_zero.jsonl", loss_on)
        assert [(f.code, f.line) for f in stage.findings] == [("TG265", 1)], loss_on


def test_the_waiver_reaches_the_workers_that_read_a_file_in_parts(tmp_path):
    big = tmp_path / "train.jsonl"
    lines = (FILES / "openai_context_only.jsonl").read_bytes().splitlines(keepends=True)
    big.write_bytes(b"".join(lines * 400))  # 400 weight-0 records, read in parts of 4 KB
    for trains_all, expected in ((False, 400), (True, 0)):
        stage = validate_dataset({"train": big}, workers=2, part_bytes=4096, trains_all=trains_all)
        assert stage.totals_by_code.get("TG265", 0) == expected
        assert stage.stats["train"]["records"] == 1200


def test_a_sweep_candidate_that_changes_loss_on_gates_its_own_data():
    base = make_spec(training={"loss_on": "replies"})
    assert changed_data_inputs(make_spec(training={"loss_on": "all"}), base) == ["training.loss_on"]
