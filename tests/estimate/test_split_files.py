"""The estimate's token count of a training split of several files: every file, counted once."""
from __future__ import annotations

from tests.support.paths import DATA
from tunegate.estimate.run import content_chars
from tunegate.gate import check

HALVES = [DATA / "splits" / "train_first.jsonl", DATA / "splits" / "train_second.jsonl"]


def test_the_characters_of_a_split_of_two_files_are_those_of_the_whole_file():
    assert content_chars(HALVES).chars == content_chars(DATA / "overlap" / "train.jsonl").chars > 0


def test_the_estimate_from_characters_names_every_file_of_the_training_split():
    report = check(DATA / "configs" / "axolotl" / "lora-two-datasets.yml")
    [told] = [f.message for f in report.stage("estimate").findings if f.code == "TG409"]
    assert told.endswith("(characters / 4) in train.jsonl + train_more.jsonl")
    content = report.facts.content["train"]
    assert content.records == 85 and told.startswith(f"training tokens estimated from characters: "
                                                     f"{int(content.content_chars / 4):,} ")
