"""A chat-tuned release whose config.json cannot be had is estimated with its base's shipped config (TG427).

Published configs name Instruct releases (LLaMA-Factory's llama3_lora_sft.yaml: Meta-Llama-3-8B-Instruct);
offline, with only the base's config shipped, the estimate gave no figure (TG404).
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import context, make_spec
from tunegate.estimate.stage import run_stage
from tunegate.spec.checkpoint import shipped_base_config


@pytest.mark.parametrize(("release", "base"), [
    ("meta-llama/Meta-Llama-3-8B-Instruct", "meta-llama--Meta-Llama-3-8B.json"),
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama--Llama-3.1-8B.json"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai--Mistral-7B-v0.3.json"),
    ("google/gemma-2-9b-it", "google--gemma-2-9b.json"),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen--Qwen2.5-7B.json"),
])
def test_a_chat_release_finds_its_bases_shipped_config(release, base):
    assert shipped_base_config(release).name == base


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B", "someone/Unknown-7B-Instruct", "Instruct", "it/it"])
def test_a_base_or_an_unknown_release_has_none(model):
    assert shipped_base_config(model) is None


def test_the_estimate_of_an_instruct_release_offline_is_its_bases_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    result = run_stage(context(make_spec(model={"id": "meta-llama/Meta-Llama-3-8B-Instruct"})))
    assert result.status == "passed" and result.stats["model"]["total_params"] == 8_030_261_248
    [said] = [f for f in result.findings if f.code == "TG427"]
    assert "meta-llama/Meta-Llama-3-8B" in said.message and said.key == "model.id"


def test_an_instruct_release_whose_base_name_no_file_system_holds_has_none():
    # Found by benchmarks/fuzz_parsers.py --only config: the base's name (a 5,000-byte version)
    # raised ENAMETOOLONG from stat, exit 3, in check, estimate and advise.
    assert shipped_base_config("Qwen/Qwen2.5-1." + "7" * 5000 + "B-Instruct") is None


def test_the_estimate_of_an_instruct_release_with_an_over_long_name_is_a_finding(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    result = run_stage(context(make_spec(model={"id": "Qwen/Qwen2.5-1." + "7" * 5000 + "B-Instruct"})))
    assert result.status != "passed" and any(f.key == "model.id" for f in result.findings)
