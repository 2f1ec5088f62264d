"""max_seq_len against the positions a model has (learned embeddings) or was trained for (rotary)."""
from __future__ import annotations

from tests.support.estimate_specs import DATA, context, make_spec
from tunegate.estimate.families import from_config
from tunegate.estimate.stage import run_stage

CONFIGS = DATA / "configs"


def tg414(model: str, max_seq_len: int):
    spec = make_spec(model={"id": str(CONFIGS / model)}, training={"max_seq_len": max_seq_len})
    return [(f.severity, f.key) for f in run_stage(context(spec)).findings if f.code == "TG414"]


def test_gpt2_has_no_position_past_its_1024_so_a_longer_max_seq_len_is_an_error():
    assert tg414("gpt2", 2048) == [("error", "training.max_seq_len")]
    assert tg414("gpt2", 1024) == []


def test_a_rotary_model_past_its_trained_context_without_rope_scaling_is_a_warning():
    assert tg414("llama-2-13b", 16384) == [("warning", "training.max_seq_len")]
    assert tg414("llama-2-13b", 4096) == []


def test_a_rope_scaling_config_is_read_as_long_context():
    # Llama 3.1 sets rope_scaling (rope_type llama3) over 131,072 positions
    assert tg414("llama-3.1-8b", 131072) == []
    scaled = from_config({**_llama2_13b(), "rope_scaling": {"rope_type": "linear", "factor": 4.0}})
    assert (scaled.max_positions, scaled.long_context) == (4096, True)
    assert not from_config({**_llama2_13b(), "rope_parameters": {"rope_type": "default"}}).long_context


def _llama2_13b() -> dict:
    import json

    return json.loads((CONFIGS / "llama-2-13b" / "config.json").read_text())
