"""Records longer than the model has positions for: a crash mid-run for learned positions, said before it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.minirun import codes, finding, load_spec, random_model_with_tiny_tokenizer, run_stage

POSITIONS = 64  # GPT-2's learned position table, shrunk: the good spec's records run to ~90 tokens


@pytest.fixture(scope="module")
def tiny_gpt2(tiny_cache, tmp_path_factory) -> Path:
    """A random 2-layer GPT-2 (learned absolute positions, as GPT-2 and OPT have) with the tiny tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel

    return random_model_with_tiny_tokenizer(tiny_cache, tmp_path_factory.mktemp("tiny-gpt2"), GPT2LMHeadModel,
                                            GPT2Config, n_positions=POSITIONS, n_embd=32, n_layer=2, n_head=2)


def gpt2_spec(folder: Path, max_seq_len: int):
    return load_spec("good", **{"model.id": str(folder), "training.precision": "fp32",
                                "training.max_seq_len": max_seq_len, "lora.target_modules": ["c_attn"]})


def test_records_past_learned_positions_are_rejected_naming_the_longest_before_training(tiny_gpt2):
    result, _ = run_stage(gpt2_spec(tiny_gpt2, 256))
    assert "TG533" not in codes(result)  # not "IndexError: index out of range in self" from a step
    past = finding(result, "TG546")
    assert (past.severity, past.key) == ("error", "training.max_seq_len")
    assert past.file == "tests/data/minirun/train.jsonl" and past.line is not None
    assert f"the model has {POSITIONS} positions" in past.message and "learned" in past.message
    assert f"max_seq_len: {POSITIONS}" in past.hint
    assert "steps" not in result.stats


def test_a_max_seq_len_within_the_positions_trains(tiny_gpt2):
    result, _ = run_stage(gpt2_spec(tiny_gpt2, POSITIONS))
    assert "TG546" not in codes(result) and result.status == "passed", result.findings


def test_records_past_rotary_positions_are_a_warning_and_train(tiny_cache, tmp_path):
    import json

    from tunegate.training.tiny_model import make_variant

    folder = make_variant(tiny_cache, tmp_path / "short-llama")
    config = json.loads((folder / "config.json").read_text())
    config["max_position_embeddings"] = POSITIONS
    (folder / "config.json").write_text(json.dumps(config))
    result, _ = run_stage(load_spec("good", **{"model.id": str(folder)}))
    past = finding(result, "TG547")
    assert (past.severity, past.key) == ("warning", "training.max_seq_len")
    assert f"the {POSITIONS} positions the model was trained on" in past.message
    assert result.status == "passed" and result.stats["steps"] == 4
