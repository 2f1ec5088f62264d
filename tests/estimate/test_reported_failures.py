"""Issue #13's wrong answers on real configs, each reproduced with the config.json it was found on.

The configs under tests/data/estimate/configs are the published ones (values written from the
models' hub repos); the expected counts are what transformers builds from them on the meta device.
"""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from tunegate.estimate.families import from_config
from tunegate.gate import check

CONFIGS = DATA / "estimate" / "configs"
SPECS = DATA / "estimate" / "specs"


def config(name: str) -> dict:
    return json.loads((CONFIGS / name / "config.json").read_text())


def test_mixtral_8x7b_counts_all_eight_experts_not_one_dense_mlp():
    # transformers: 46,702,792,704 (8 experts x 3 x 4096 x 14336 per layer, a router, GQA attention)
    arch = from_config(config("mixtral-8x7b"))
    assert arch.param_count() == 46_702_792_704
    # two experts per token: 12.9 B parameters take part in each token's matmuls
    assert 12.8e9 < arch.active_param_count() < 13.0e9


def test_mixtral_8x7b_does_not_fit_one_a100_40gb_and_is_not_approved():
    # its bf16 weights alone are 87 GiB; the dense count said "23.3 / 39.49 GiB (fits)"
    report = check(SPECS / "mixtral-a100-40gb.yaml")
    estimate = next(s for s in report.stages if s.name == "estimate")
    assert estimate.status == "failed"
    assert {f.code for f in estimate.findings} & {"TG401", "TG403"}
    assert estimate.stats["memory"]["breakdown"]["weights"] > 86
    assert not report.approved_for_full_run


def test_qwen3_30b_a3b_counts_128_experts_and_3_3_b_active():
    arch = from_config(config("qwen3-30b-a3b"))
    assert arch.param_count() == 30_532_122_624
    assert 3.2e9 < arch.active_param_count() < 3.4e9


def test_gemma_2_2b_counts_its_tied_embedding_once():
    # Gemma2Config ties the embedding by default: the published config does not say so
    arch = from_config(config("gemma-2-2b"))
    assert arch.tie_embeddings
    assert arch.param_count() == 2_614_341_888


@pytest.mark.parametrize("name, expected", [("gpt2", 124_439_808), ("phi-2", 2_779_683_840),
                                            ("phi-2-msft", 2_779_683_840)])
def test_gpt2_and_phi_2_configs_with_their_own_key_names_are_counted(name, expected):
    # GPT-2 writes n_embd / n_layer / n_head; phi-2's first release (model_type phi-msft) did too
    assert from_config(config(name)).param_count() == expected


def test_a_model_without_a_reachable_config_is_never_approved(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    report = check(SPECS / "no-config.yaml")
    estimate = next(s for s in report.stages if s.name == "estimate")
    finding = next(f for f in estimate.findings if f.code == "TG404")
    assert "config.json" in finding.hint
    assert not report.approved_for_full_run and "estimate" in report.not_run
