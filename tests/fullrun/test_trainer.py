"""tunegate.fullrun.trainer: the full-run trainer on the tiny model, on the CPU, for a few steps."""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from tests.support.collections_counted import run_as_main
from tests.support.minirun import DATA, load_spec
from tests.support.paths import DATA as TEST_DATA
from tunegate.fullrun.publish import COMPLETE, is_complete
from tunegate.fullrun.result import TrainResult, TrainStep
from tunegate.fullrun.token_cache import KEPT_TOKENS
from tunegate.fullrun.trainer import main, train
from tunegate.tracking.record import CandidateRecord

PREQUANTIZED = TEST_DATA / "estimate" / "prequantized"

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


@pytest.fixture(scope="module")
def completed(tiny_cache, tmp_path_factory) -> tuple[TrainResult, Path]:
    """A good spec trained 4 steps, with a checkpoint and an evaluation every 2."""
    out = tmp_path_factory.mktemp("full-run")
    spec = load_spec("good", **{"full_run.save_steps": 2})
    return train(spec, output_dir=out, max_steps=4, log=lambda line: None), out


def test_a_good_spec_trains_to_completion_with_finite_losses(completed):
    result, _ = completed
    assert result.status == "completed" and result.ok and result.codes == [] and result.reason == ""
    assert result.global_step == result.max_steps == 4
    assert math.isfinite(result.final_train_loss) and math.isfinite(result.val_loss)
    assert result.final_train_loss == result.steps[-1].loss


def test_every_step_is_recorded_with_its_loss_gradient_norm_and_learning_rate(completed):
    result, _ = completed
    assert [s.step for s in result.steps] == [1, 2, 3, 4]
    assert all(s.grad_norm > 0 and math.isfinite(s.loss) for s in result.steps)
    assert result.steps[0].learning_rate == pytest.approx(1e-3)  # the spec's, then linear decay
    assert result.steps[-1].learning_rate < result.steps[0].learning_rate


def test_the_run_is_measured(completed):
    result, _ = completed
    assert result.device == "cpu" and result.precision == "bf16" and result.num_processes == 1
    assert result.tokens_per_s > 0 and result.train_runtime_s > 0 and result.peak_memory_bytes > 2**20
    assert (result.train_records, result.validation_records, result.dropped_records) == (12, 4, 0)


def test_the_frozen_validation_set_is_evaluated_every_save_steps_and_at_the_end(completed):
    result, out = completed
    assert [e.step for e in result.evals] == [2, 4]  # the periodic one at step 4 is the final one
    assert result.val_loss == result.evals[-1].val_loss
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-2", "checkpoint-4"]


def test_the_adapter_and_tokenizer_are_published_with_a_complete_marker(completed):
    result, out = completed
    adapter = Path(result.adapter_dir)
    assert adapter == out / "adapter" and is_complete(adapter)
    marker = json.loads((adapter / COMPLETE).read_text())
    assert marker["global_step"] == 4 and marker["val_loss"] == result.val_loss
    assert marker["files"]["adapter_model.safetensors"] > 1000
    assert sorted(p.name for p in out.iterdir()) == ["adapter", "checkpoints"]  # no temporary folder left


def test_a_training_without_checkpoints_writes_none_and_computes_the_same(completed, tmp_path):
    # a sweep candidate's (launcher.train_apart: --no-checkpoints); the fixture's run wrote two
    result, out = completed
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-2", "checkpoint-4"]
    spec = load_spec("good", **{"full_run.save_steps": 2})
    bare = train(spec, output_dir=tmp_path, max_steps=4, log=lambda line: None, checkpoints=False)
    assert bare.ok and is_complete(Path(bare.adapter_dir))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]  # not even an empty checkpoints folder
    assert [(s.step, s.loss) for s in bare.steps] == [(s.step, s.loss) for s in result.steps]
    assert bare.val_loss == result.val_loss


def test_a_training_on_tokens_an_earlier_trainer_kept_logs_and_computes_the_same(completed, tmp_path):
    # a sweep's later candidates (launcher.train_apart: --token-cache, tunegate.fullrun.token_cache)
    result, _ = completed
    spec = load_spec("good", **{"full_run.save_steps": 2})
    logs: list[list[str]] = [[], []]
    for number, log in enumerate(logs):
        kept = train(spec, output_dir=tmp_path / str(number), max_steps=4, log=log.append,
                     token_cache=tmp_path / "tokens")
        assert [(s.step, s.loss) for s in kept.steps] == [(s.step, s.loss) for s in result.steps]
        assert kept.val_loss == result.val_loss
    assert len(list((tmp_path / "tokens").glob("*.json"))) == 1  # the second read the first's
    same = [[line for line in log if str(tmp_path) not in line] for log in logs]  # each names its own adapter
    assert KEPT_TOKENS not in same[0] and KEPT_TOKENS in same[1]
    assert same[0] == [line for line in same[1] if line != KEPT_TOKENS]
    assert any(line.startswith("train: ") for line in same[0])


def test_the_published_adapter_loads_into_a_fresh_base_model(completed, tiny_cache):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    result, _ = completed
    tokenizer = AutoTokenizer.from_pretrained(result.adapter_dir)
    assert tokenizer.chat_template
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_cache), result.adapter_dir)
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], return_tensors="pt",
                                        add_generation_prompt=True, return_dict=True)["input_ids"]
    with torch.no_grad():
        assert torch.isfinite(model(input_ids=ids).logits).all()


def test_the_result_maps_onto_the_tracking_record(completed):
    result, _ = completed
    record = CandidateRecord(candidate_id="c" * 16, params={}, verdict="approved", **result.record_fields())
    assert [(s.step, s.loss) for s in record.train_steps] == [(s.step, s.loss) for s in result.steps]
    assert record.final_train_loss == result.final_train_loss and record.val_loss == result.val_loss
    assert record.peak_memory_gib == pytest.approx(result.peak_memory_bytes / 2**30)


def test_the_result_json_keeps_nan_and_inf_losses(tmp_path):
    diverged = TrainResult(status="unhealthy", codes=["TG701"], final_train_loss=float("nan"),
                           steps=[TrainStep(step=1, loss=float("inf"), grad_norm=float("nan"))])
    back = TrainResult.read(diverged.write(tmp_path / "result.json"))
    assert math.isnan(back.final_train_loss) and math.isinf(back.steps[0].loss)
    assert math.isnan(back.steps[0].grad_norm)


def test_fp16_overflow_from_a_huge_learning_rate_stops_the_run_unhealthy(tiny_cache, tmp_path):
    lines: list[str] = []
    result = train(load_spec("lr_huge"), output_dir=tmp_path, max_steps=6, log=lines.append)
    assert result.status == "unhealthy"
    assert set(result.codes) <= {"TG701", "TG702"} and result.codes
    assert result.global_step < 6  # stopped, not run to the end
    assert any(p.value in ("nan", "inf", "-inf") for p in result.problems)
    assert "no adapter saved" in result.reason and result.adapter_dir is None
    assert not list(tmp_path.rglob(COMPLETE)) and not (tmp_path / "adapter").exists()
    assert any(line.startswith("unhealthy:") for line in lines)


def test_a_gradient_stuck_at_zero_stops_the_run(tiny_cache, tmp_path):
    # bf16 saturates at learning_rate 1e4 instead of overflowing: the gradient dies at step 3. The spec
    # stage rejects 1e4 (TG125); the trainer's own health check is tested past it.
    spec = load_spec("lr_huge", **{"training.precision": "bf16", "training.learning_rate": 1e4})
    result = train(spec, output_dir=tmp_path, max_steps=8, log=lambda line: None)
    assert result.status == "unhealthy" and result.codes == ["TG703"]
    assert result.global_step < 8 and result.problems[0].value == "0.0"
    assert not (tmp_path / "adapter").exists()


def test_sharding_is_refused_before_anything_loads(tmp_path):
    result = train(load_spec("good", **{"training.sharding": "fsdp"}), output_dir=tmp_path)
    assert result.status == "failed" and result.codes == ["TG709"]
    assert result.reason.startswith("TG160: training.sharding 'fsdp'")  # the spec stage's own words
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None,
                    reason="bitsandbytes is installed here: it loads the stored 4-bit checkpoint")
def test_a_checkpoint_stored_in_4bit_is_refused_before_loading_without_bitsandbytes(tmp_path):
    # What the spec stage rejects (TG161 at model.id) the trainer refuses too, before it loads
    # anything, rather than failing inside transformers' quantizer.
    stored = PREQUANTIZED / "llama-3-8b-bnb-4bit"
    result = train(load_spec("good", **{"model.id": str(stored)}), output_dir=tmp_path / "out", log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG709"]
    assert result.reason.startswith("TG161: ") and "stored in 4 bit with bitsandbytes" in result.reason
    assert not (tmp_path / "out").exists()


def test_a_model_that_cannot_be_loaded_fails_before_training(tmp_path):
    result = train(load_spec("good", **{"model.id": str(tmp_path / "no-such-model")}), output_dir=tmp_path / "out",
                   log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG709"]
    assert "no-such-model" in result.reason and "cannot be loaded" in result.reason


def test_a_tokenizer_without_chat_template_fails_before_training(tiny_cache, tmp_path):
    from tunegate.training.tiny_model import make_variant

    base = make_variant(tiny_cache, tmp_path / "base-model", chat_template=False)
    result = train(load_spec("good", **{"model.id": str(base)}), output_dir=tmp_path / "out", log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG709"]
    assert result.reason == f"the tokenizer of {str(base)!r} has no chat template"


def test_a_pad_token_the_tokenizer_lacks_ends_the_run_as_a_crash(tiny_cache, tmp_path):
    # The gate rejects it first (the mini-run's TG551); a run started anyway stops before the model loads.
    result = train(load_spec("good", **{"model.pad_token": "<|pad_me|>"}), output_dir=tmp_path / "out",
                   log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG705"]
    assert result.reason == ("training crashed: ValueError: model.pad_token '<|pad_me|>' is not a token of "
                             "this tokenizer")


def test_a_validation_set_without_usable_records_fails(tiny_cache, tmp_path):
    spec = load_spec("good", **{"data.validation": DATA / "validation_empty.jsonl"})
    result = train(spec, output_dir=tmp_path, max_steps=2, log=lambda line: None)
    assert result.status == "failed" and result.codes == ["TG710"]
    assert "validation set has no usable record" in result.reason
    assert result.validation_records == 0 and result.dropped_records == 1


def test_the_cli_writes_the_result_and_exits_1_when_unhealthy(tiny_cache, tmp_path):
    code = main(["--spec", str(DATA / "lr_huge.yaml"), "--output-dir", str(tmp_path / "out"),
                 "--max-steps", "4", "--result", str(tmp_path / "result.json")])
    assert code == 1
    assert TrainResult.read(tmp_path / "result.json").status == "unhealthy"


def test_the_cli_turns_an_unreadable_spec_into_a_failed_result(tmp_path):
    code = main(["--spec", str(tmp_path / "missing.yaml"), "--result", str(tmp_path / "result.json")])
    result = TrainResult.read(tmp_path / "result.json")
    assert code == 1 and result.status == "failed" and result.codes == ["TG709"]
    assert "missing.yaml" in result.reason


@pytest.mark.slow  # the training stack imported in a fresh interpreter (~3 s)
def test_run_as_a_command_the_trainer_imports_its_stack_with_the_collector_off_then_freezes_it(tmp_path):
    # A base that cannot be loaded: the trainer imports its whole stack, then stops before training.
    spec = tmp_path / "spec.yaml"
    spec.write_text((DATA / "good.yaml").read_text().replace("tunegate/tiny-llama", str(tmp_path / "no-such-model")))
    got = run_as_main("tunegate.fullrun.trainer", ["--spec", str(spec), "--result", str(tmp_path / "result.json")])
    result = TrainResult.read(tmp_path / "result.json")
    assert got["code"] == 1 and result.codes == ["TG709"] and "no-such-model" in result.reason
    assert got["during_stack"] == [] and got["frozen"] > 100_000 and got["enabled"]
