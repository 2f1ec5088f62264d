"""Fit verdicts on real models and GPUs against published memory figures.

Each spec is under tests/data/estimate/specs, its figure and source in that folder's README. A
spec without a 4-bit base or a bitsandbytes optimizer goes through the whole gate as a user runs
it (`tunegate check SPEC`); the others through the estimate stage alone, since the spec stage
refuses them where bitsandbytes is not installed (TG161: CPU-only machines like ours).
"""
from __future__ import annotations

import json

import pytest
import yaml

from tests.support.paths import DATA
from tunegate.estimate.families import from_config
from tunegate.estimate.memory import estimate_memory
from tunegate.estimate.run import estimate_run
from tunegate.estimate.setup import _installed_major, experts_are_linear_modules, setup_from_spec
from tunegate.estimate.stage import run_stage
from tunegate.facts import GateFacts
from tunegate.gate import check
from tunegate.spec import gpus
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

SPECS = DATA / "estimate" / "specs"
NO_FIT = {"TG401", "TG402", "TG403"}


def load(name: str) -> Spec:
    return Spec.model_validate(yaml.safe_load((SPECS / name).read_text())).resolve_paths(SPECS)


def estimate_stage(name: str):
    """The whole gate's report and its estimate stage."""
    report = check(SPECS / name)
    return report, next(s for s in report.stages if s.name == "estimate")


def estimate_only(name: str):
    """The estimate stage on the spec, as the gate runs it after the spec stage."""
    ctx = GateContext(spec_path=SPECS / name, spec=load(name), files={}, cap=20, advisor=False, facts=GateFacts())
    return run_stage(ctx)


def codes(stage) -> set[str]:
    return {f.code for f in stage.findings}


def test_qlora_65b_with_a_paged_optimizer_fits_one_48_gb_gpu():
    # QLoRA (Dettmers et al. 2023): 65B, r=64 on every linear layer, paged AdamW, one 48 GB GPU
    stage = estimate_only("qlora-65b-a6000-paged.yaml")
    assert stage.stats["memory"]["verdict"] == "fits"
    assert not codes(stage) & NO_FIT


def test_the_paged_optimizers_states_are_what_lets_it_fit():
    # the same run with a fused AdamW keeps its 6 GiB of fp32 moments on the GPU throughout
    spec = load("qlora-65b-a6000-paged.yaml")
    fused = spec.model_copy(update={"training": spec.training.model_copy(update={"optimizer": "adamw_torch_fused"})})
    paged_est, fused_est = estimate_run(spec, base_dir=SPECS), estimate_run(fused, base_dir=SPECS)
    assert paged_est.memory.breakdown_gib["optimizer_states"] == fused_est.memory.breakdown_gib["optimizer_states"] > 5
    assert fused_est.memory.verdict != "fits"


def test_a_7b_full_fine_tune_with_mixed_precision_adamw_does_not_fit_one_80_gb_gpu():
    # ZeRO's 16 bytes per parameter: 7.25 B x 16 = 116 GB
    report, stage = estimate_stage("full-7b-a100-80gb.yaml")
    assert stage.stats["memory"]["verdict"] == "does not fit"
    assert stage.stats["memory"]["peak_gib"] > 100
    assert codes(stage) & {"TG401", "TG403"}
    assert not report.approved_for_full_run


def test_lora_on_llama_3_1_8b_with_checkpointing_fits_one_24_gb_gpu():
    # torchtune publishes 16.2 GiB on one RTX 4090; the HF Trainer's full fp32 loss costs more
    _, stage = estimate_stage("lora-8b-rtx4090.yaml")
    memory = stage.stats["memory"]
    assert memory["verdict"] == "fits"
    assert 16.2 < memory["peak_gib"] < 23.55
    assert not codes(stage) & NO_FIT


def test_mixtral_8x7b_bf16_lora_does_not_fit_one_80_gb_gpu_even_at_micro_batch_1():
    # 46.7 B parameters in bf16: 93.4 GB of weights (Hugging Face's Mixtral blog: "> 90 GB")
    report, stage = estimate_stage("mixtral-lora-a100-80gb.yaml")
    assert "TG403" in codes(stage)
    assert stage.stats["memory"]["breakdown"]["weights"] > 86
    assert not report.approved_for_full_run


def mixtral_qlora(linear_experts: bool):
    spec = load("mixtral-qlora-a100-40gb.yaml")
    arch = from_config(json.loads((DATA / "estimate" / "configs" / "mixtral-8x7b" / "config.json").read_text()))
    setup = setup_from_spec(spec).model_copy(update={"linear_experts": linear_experts})
    return estimate_memory(arch, setup, gpus.lookup("A100-40GB"))


def test_mixtral_qlora_with_transformers_4_holds_the_published_23_gb_of_4_bit_weights():
    # Hugging Face's Mixtral blog: 4-bit needs "> 23 GB"; every expert an nn.Linear, quantised
    memory = mixtral_qlora(linear_experts=True)
    assert 21 < memory.breakdown_gib["weights"] < 24.5
    assert memory.verdict == "fits"


def test_mixtral_qlora_with_transformers_5_keeps_its_fused_experts_in_bf16():
    # transformers 5's experts are 3-D parameters, which bitsandbytes does not quantise (#1849)
    memory = mixtral_qlora(linear_experts=False)
    assert memory.breakdown_gib["weights"] > 80
    assert memory.verdict == "does not fit"


def test_all_linear_lora_adapts_every_expert_only_where_experts_are_linear_modules():
    # transformers 4: 128 experts x 48 layers x (gate, up, down) of Qwen3-30B-A3B take adapters
    from tests.support.estimate_specs import make_spec
    from tunegate.estimate.memory import trainable_params

    arch = from_config(json.loads((DATA / "estimate" / "configs" / "qwen3-30b-a3b" / "config.json").read_text()))
    setup = setup_from_spec(make_spec(lora={"r": 16, "target_modules": "all-linear"}))
    fused = trainable_params(arch, setup.model_copy(update={"linear_experts": False}))
    linear = trainable_params(arch, setup.model_copy(update={"linear_experts": True}))
    assert linear - fused == 48 * 128 * 16 * (2 * (2048 + 768) + (768 + 2048)) == 830_472_192


def test_the_gate_reads_the_installed_transformers_and_says_why_mixtral_stays_16_bit():
    stage = estimate_only("mixtral-qlora-a100-40gb.yaml")
    if experts_are_linear_modules():
        assert stage.stats["memory"]["verdict"] == "fits"
    else:
        finding = next(f for f in stage.findings if f.code in {"TG401", "TG403"})
        assert "#1849" in finding.hint
        assert stage.status == "failed"


def test_deepseek_v2_lite_counts_all_its_experts_and_does_not_fit_one_24_gb_gpu():
    # 15.7 B parameters (31.4 GB in bf16); the Llama-style guess counted 2.69 B and said "fits"
    report, stage = estimate_stage("deepseek-v2-lite-lora-rtx4090.yaml")
    assert stage.stats["model"]["total_params"] == pytest.approx(15.7e9, rel=0.01)
    assert stage.stats["model"]["count"] == "config"
    assert codes(stage) & {"TG401", "TG403"}
    assert not report.approved_for_full_run


def test_a_model_type_nobody_knows_cannot_be_estimated_and_is_never_approved(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path))
    report, stage = estimate_stage("unknown-type-a100-80gb.yaml")
    finding = next(f for f in stage.findings if f.code == "TG411")
    assert finding.severity == "error"
    assert "cannot estimate" in finding.message and "acme_decoder" in finding.message
    assert stage.status == "failed"
    assert not report.approved_for_full_run


def test_qwen2_5_0_5b_with_its_tied_embedding_fits_a_t4():
    _, stage = estimate_stage("qwen2.5-0.5b-lora-t4.yaml")
    memory = stage.stats["memory"]
    assert stage.stats["model"]["total_params"] == pytest.approx(0.494e9, rel=0.01)
    assert memory["breakdown"]["weights"] < 1.0  # 0.49 B x 2 bytes: the tied lm_head is not a second copy
    assert memory["verdict"] == "fits"


def test_gemma_3_4b_its_published_config_is_estimated_with_its_vision_tower():
    # before: TG405 "'num_attention_heads' must be a positive integer" on the config as published
    from tests.support.estimate_specs import context, make_spec

    spec = make_spec(model={"id": str(DATA / "estimate" / "configs" / "gemma-3-4b-it")},
                     training={"micro_batch_size": 1, "gradient_checkpointing": True}, hardware={"gpu": "RTX-4090"})
    stage = run_stage(context(spec))
    assert stage.status == "passed"
    assert stage.stats["model"]["total_params"] == pytest.approx(4.30e9, rel=0.01)
    assert stage.stats["memory"]["breakdown"]["weights"] == pytest.approx(4.30e9 * 2 / 2**30, rel=0.01)


def test_the_installed_major_version_is_read_from_the_dist_info_folder_beside_the_package(tmp_path, monkeypatch):
    for name, folder in (("fakeformers", "fakeformers-4.57.1.dist-info"), ("newformers", "newformers-5.2.0.dist-info")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
        (tmp_path / folder).mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert (_installed_major("fakeformers"), _installed_major("newformers")) == (4, 5)
    assert _installed_major("no_such_package_here") is None
