"""The mini-run on a training split of two files: the same sample, the same steps, as on the one file.

tests/data/splits/minirun_train_first.jsonl + minirun_train_second.jsonl is tests/data/minirun/train.jsonl
cut after line 6 (sample_size 8 of its 12 records: some of each half).
"""
from __future__ import annotations

from tests.support.minirun import load_spec, run_stage
from tests.support.paths import DATA

HALVES = [DATA / "splits" / "minirun_train_first.jsonl", DATA / "splits" / "minirun_train_second.jsonl"]


def test_a_mini_run_on_a_split_of_two_files_trains_on_the_sample_of_the_whole_file(tiny_cache):
    (whole, whole_ctx), (halves, ctx) = (run_stage(load_spec("good")),
                                         run_stage(load_spec("good", **{"data.train": HALVES})))
    assert halves.status == "passed", halves.findings
    assert halves.stats["losses"] == whole.stats["losses"] and halves.stats["sample_records"] == 8
    assert halves.stats["token_audit"]["train"] == whole.stats["token_audit"]["train"]
    assert ctx.facts.tokens == whole_ctx.facts.tokens and ctx.files["train"] == HALVES
