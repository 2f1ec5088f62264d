"""A spec that packs is mini-run packed, as the full run trains it, and packed records must not see each other."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.minirun import codes, finding, load_spec, random_model_with_tiny_tokenizer, run_stage


@pytest.fixture(scope="module")
def packed(tiny_cache):
    return run_stage(load_spec("good", **{"training.packing": True}))


def test_a_spec_that_packs_trains_packed_rows_in_the_mini_run(packed):
    result, _ = packed
    assert result.status == "passed", result.findings
    assert codes(result) == {"TG515", "TG536"}
    stats = result.stats
    assert stats["packing"]["records"] == stats["sample_records"] == 8
    assert stats["packing"]["rows"] < 8 and stats["batch_seq_len"] <= 256
    assert stats["packing"]["cross_record_logit_diff"] < 1e-2  # bf16 rounding, no record sees another


def test_the_packed_mini_run_trains_and_round_trips(packed):
    stats = packed[0].stats
    assert stats["steps"] == 4 and stats["probe_loss_after"] < stats["probe_loss_before"]
    assert stats["reload_max_logit_diff"] == 0.0 and stats["tokens_per_s"] > 0


@pytest.fixture(scope="module")
def tiny_opt(tiny_cache, tmp_path_factory) -> Path:
    """A random 2-layer OPT with the tiny tokenizer: OPT's learned positions come from the attention
    mask, not the position ids, so packed records attend to each other (as BLOOM's ALiBi does)."""
    from transformers import OPTConfig, OPTForCausalLM

    return random_model_with_tiny_tokenizer(tiny_cache, tmp_path_factory.mktemp("tiny-opt"), OPTForCausalLM,
                                            OPTConfig, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                            ffn_dim=64, word_embed_proj_dim=32, max_position_embeddings=512)


def opt_spec(folder: Path, packing: bool):
    return load_spec("good", **{"model.id": str(folder), "training.packing": packing, "training.precision": "fp32",
                                "lora.target_modules": ["q_proj", "v_proj"]})


def test_packing_on_a_model_whose_records_see_each_other_is_rejected(tiny_opt):
    result, _ = run_stage(opt_spec(tiny_opt, packing=True))
    leak = finding(result, "TG540")
    assert (leak.severity, leak.key) == ("error", "training.packing")
    assert "OPTForCausalLM" in leak.message and "attend to each other" in leak.message
    assert "training.packing: false" in leak.hint


def test_the_same_model_unpacked_passes(tiny_opt):
    result, _ = run_stage(opt_spec(tiny_opt, packing=False))
    assert "TG540" not in codes(result) and result.status == "passed", result.findings
