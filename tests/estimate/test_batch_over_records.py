"""A global batch above the training records makes every epoch one optimizer step (TG416).

The configs under tests/data/estimate/batch train on tests/data/configs/data/train.jsonl, 40 records;
what the HF Trainer does with them (3 epochs of 8 x 16 over 40 records: 3 steps; max_steps 30:
30 steps) was read off transformers 5.24's Trainer on a tiny model.
"""
from __future__ import annotations

from tests.support.estimate_specs import context, make_spec
from tests.support.paths import DATA
from tunegate.estimate.stage import run_stage as estimate_stage
from tunegate.gate import check

BATCH = DATA / "estimate" / "batch"
TRAIN = DATA / "configs" / "data" / "train.jsonl"  # 40 records
FORTY = {"content": {"train": {"records": 40, "content_chars": 15_700}}}  # as the dataset stage counts TRAIN


def estimate_of(report):
    return next(s for s in report.stages if s.name == "estimate")


def tg416(stage):
    return [f for f in stage.findings if f.code == "TG416"]


def on_forty_records(gpus: int = 1, **training) -> list:
    spec = make_spec(data={"train": str(TRAIN)}, training=training, hardware={"count": gpus},
                     estimate={"dataset_tokens": None})
    return tg416(estimate_stage(context(spec, facts=FORTY)))


def test_a_batch_of_128_over_40_records_warns_that_3_epochs_are_3_steps():
    report = check(BATCH / "batch-over-records.yml")
    [finding] = tg416(estimate_of(report))
    assert finding.severity == "warning" and report.gates_passed
    # an axolotl config: named by its own keys and line, as the spec stage names them
    assert ("the global batch of 128 sequences (micro_batch_size 8 x grad_accum_steps 16) is larger "
            "than the 40 records of train.jsonl") in finding.message
    assert "each epoch is 1 optimizer step" in finding.message and "3 epoch(s) train 3 step(s)" in finding.message
    assert "Lower gradient_accumulation_steps (at 1, an epoch is 5 optimizer steps)" in finding.hint
    assert (finding.key, finding.line) == ("gradient_accumulation_steps", 27)


def test_under_max_steps_the_run_takes_its_steps_and_is_not_warned():
    report = check(BATCH / "batch-max-steps.yml")
    assert not tg416(estimate_of(report))


def test_under_max_steps_a_step_trains_at_most_the_whole_set():
    # each of the 30 steps is one pass over the 40 records, not 128 records' worth of tokens
    tokens = estimate_of(check(BATCH / "batch-max-steps.yml")).stats["tokens"]
    assert tokens["total"] == 30 * tokens["per_epoch"] and tokens["epochs"] == 30


def test_the_gpus_count_towards_the_global_batch():
    [finding] = on_forty_records(gpus=4, micro_batch_size=4, grad_accum_steps=4, epochs=1)
    assert "(training.micro_batch_size 4 x grad_accum_steps 4 x 4 GPUs)" in finding.message
    assert "1 epoch(s) train 1 step(s)" in finding.message


def test_a_batch_within_the_records_is_not_warned():
    assert not on_forty_records(micro_batch_size=8, grad_accum_steps=5, epochs=3)


def test_a_fractional_epoch_count_rounds_up_to_whole_steps_as_the_trainer_does():
    [finding] = on_forty_records(micro_batch_size=8, grad_accum_steps=16, epochs=2.5)
    assert "2.5 epoch(s) train 3 step(s)" in finding.message


def test_fewer_records_than_one_micro_batch_asks_for_a_smaller_micro_batch():
    [finding] = on_forty_records(micro_batch_size=64, grad_accum_steps=1, epochs=1)
    assert finding.hint.startswith("Lower training.micro_batch_size")


def test_files_that_are_a_sample_of_a_declared_larger_set_are_not_warned():
    # estimate.dataset_tokens: the full set is bigger than the 40 records here
    spec = make_spec(data={"train": str(TRAIN)}, training={"micro_batch_size": 8, "grad_accum_steps": 16})
    assert not tg416(estimate_stage(context(spec, facts=FORTY)))
