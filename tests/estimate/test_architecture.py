"""The architecture is read from config.json and its parameter count is exact."""
from __future__ import annotations

import time

import pytest

from tests.support.paths import DATA as TEST_DATA
from tunegate.estimate.architecture import lora_param_count, targeted_modules
from tunegate.estimate.families import load_architecture

DATA = TEST_DATA / "estimate"


def test_llama_3_1_8b_has_8_030_261_248_parameters():
    # embed 128256*4096 = 525,336,576 (x2: untied lm_head); per layer q/o 2*4096^2 + k/v 2*4096*1024
    # + MLP 3*4096*14336 + 2 norms*4096 = 218,112,000; x32 layers + final norm 4096.
    arch = load_architecture("meta-llama/Llama-3.1-8B")
    assert arch.param_count() == 2 * 525_336_576 + 32 * 218_112_000 + 4096 == 8_030_261_248


def test_llama_3_2_1b_counts_its_tied_embedding_once():
    # embed 128256*2048 = 262,668,288 once; per layer 2*2048^2 + 2*2048*512 + 3*2048*8192 + 2*2048
    # = 60,821,504; x16 + 2048.
    arch = load_architecture("meta-llama/Llama-3.2-1B")
    assert arch.tie_embeddings
    assert arch.param_count() == 262_668_288 + 16 * 60_821_504 + 2048 == 1_235_814_400


def test_qwen2_counts_the_qkv_biases_its_config_does_not_declare():
    arch = load_architecture("Qwen/Qwen2.5-7B")
    biases = {m.name: m.bias for m in arch.attention}
    assert biases == {"q_proj": True, "k_proj": True, "v_proj": True, "o_proj": False}
    assert arch.param_count() == 7_615_616_512


def test_lora_on_q_and_v_of_llama_3_2_3b_matches_peft_published_count():
    # PEFT's MetaMathQA benchmark reports 9,175,040 trainable params for r=32 on q_proj, v_proj.
    arch = load_architecture("meta-llama/Llama-3.2-3B")
    assert lora_param_count(arch, ["q_proj", "v_proj"], 32) == 28 * 32 * ((3072 + 3072) + (3072 + 1024))
    assert lora_param_count(arch, ["q_proj", "v_proj"], 32) == 9_175_040


def test_all_linear_adapts_every_projection_of_a_layer():
    arch = load_architecture("meta-llama/Llama-3.2-1B")
    assert targeted_modules(arch, "all-linear") == [
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    per_layer = 16 * ((2048 + 2048) * 2 + (2048 + 512) * 2 + (2048 + 8192) * 2 + (8192 + 2048))
    assert lora_param_count(arch, "all-linear", 16) == 16 * per_layer


def test_a_local_folder_holding_only_config_json_is_enough():
    arch = load_architecture(str(DATA / "config-only"))
    assert arch.param_count() == 1_235_814_400
    assert arch.source.endswith("config.json")


def test_an_unknown_model_without_hub_access_has_no_architecture(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    assert load_architecture("nobody/no-such-model-anywhere") is None
    assert time.perf_counter() - start < 2.0


def test_a_config_without_integer_shapes_is_a_value_error():
    with pytest.raises(ValueError, match="must be a positive integer"):
        load_architecture(str(DATA / "broken-config"))
