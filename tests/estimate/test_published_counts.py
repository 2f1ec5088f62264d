"""Parameter counts of real architectures against the published figures, within 1 %.

The configs are the models' own (tests/data/estimate/configs, each source and figure named in
its README); the counts are the config-only counter's, no torch, no weights.
"""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from tunegate.estimate.families import from_config

CONFIGS = DATA / "estimate" / "configs"

PUBLISHED_TOTALS = [
    ("llama-3.1-8b", 8.03e9), ("llama-3.1-70b", 70.6e9), ("llama-65b", 65.2e9),
    ("mistral-7b-v0.3", 7.25e9), ("qwen2.5-7b", 7.62e9), ("qwen2.5-0.5b", 0.49e9), ("llama-2-13b", 13.0e9),
    ("gemma-2-9b", 9.24e9), ("phi-3-mini-4k", 3.82e9), ("mixtral-8x7b", 46.7e9),
    ("qwen3-30b-a3b", 30.5e9), ("deepseek-v2-lite", 15.7e9), ("gemma-3-4b-it", 4.30e9),
    ("deepseek-v3", 671e9),
]


def arch(name: str):
    return from_config(json.loads((CONFIGS / name / "config.json").read_text()))


@pytest.mark.parametrize("name, published", PUBLISHED_TOTALS, ids=[n for n, _ in PUBLISHED_TOTALS])
def test_the_total_count_is_within_one_percent_of_the_published_figure(name, published):
    counted = arch(name)
    assert counted.exact
    assert counted.param_count() == pytest.approx(published, rel=0.01)


def test_qwen2_5_0_5b_counts_its_tied_embedding_once():
    # 151,936 x 896 = 136 M: counted twice it would be 0.63 B, 28 % over the published 0.49 B
    counted = arch("qwen2.5-0.5b")
    assert counted.tie_embeddings
    assert counted.lm_head_params() == 0


def test_mixtral_8x7b_uses_12_9_b_parameters_per_token():
    assert arch("mixtral-8x7b").active_param_count() == pytest.approx(12.9e9, rel=0.01)


def test_qwen3_30b_a3b_uses_the_published_3_3_b_per_token():
    # the model card's 3.3B is 3.35 B cut to one decimal (embeddings included, as Qwen counts)
    assert 3.3e9 <= arch("qwen3-30b-a3b").active_param_count() < 3.4e9


def test_deepseek_v2_lite_multiplies_2_4_b_parameters_per_token():
    # DeepSeek counts the matmuls' parameters: six of 64 routed experts, both shared experts,
    # the dense first layer, MLA attention and the lm_head (the input embedding is a lookup)
    counted = arch("deepseek-v2-lite")
    assert 2.35e9 <= counted.matmul_params() < 2.5e9
    assert counted.active_param_count() < 0.2 * counted.param_count()


def test_deepseek_v3_multiplies_the_published_37_b_per_token():
    # query through its own latent (q_lora_rank 1536), 8 of 256 routed experts, 3 dense layers;
    # the hub's 685 B include the 14 B multi-token-prediction module transformers does not build
    assert 36.5e9 <= arch("deepseek-v3").matmul_params() < 37.5e9


def test_gemma_3_4b_it_counts_the_vision_tower_the_trainer_loads_too():
    # Gemma 3 report, Table 1: a 417M SigLIP encoder beside the language model; the published
    # config leaves the heads and the vocabulary to Gemma3TextConfig's defaults (it was TG405)
    counted = arch("gemma-3-4b-it")
    assert (counted.num_heads, counted.num_kv_heads, counted.vocab_size) == (8, 4, 262_208)
    assert counted.tower_params == pytest.approx(417e6 + 2.95e6, rel=0.01)  # the encoder and its projector
    assert counted.active_param_count() == counted.param_count() - counted.tower_params
