"""lora.target_modules naming no module of the model is refused before any weight is loaded (TG415).

The configs under tests/data/estimate/lora-targets are axolotl configs and tunegate specs as users
write them, on the shipped config.json of each model; the module names they are judged by are
checked against transformers' own models built on the meta device.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from tests.support.estimate_specs import context, make_spec
from tests.support.paths import DATA
from tunegate.estimate.architecture import lora_param_count
from tunegate.spec.checkpoint import SHIPPED
from tunegate.estimate.families import from_config, load_architecture
from tunegate.estimate.module_names import LEAF_NAMES, leaf_names, unmatched_targets
from tunegate.estimate.stage import run_stage as estimate_stage
from tunegate.gate import check

TARGETS = DATA / "estimate" / "lora-targets"
CONFIGS = sorted(SHIPPED.glob("*.json")) + sorted((DATA / "estimate" / "configs").glob("*/config.json"))
# Names the sets hold that transformers 5 does not build for the configs here: transformers 4's
# (Mixtral's block_sparse_moe and w1/w2/w3, an expert's own gate/up/down_proj, GPT-NeoX's embed_out,
# older Phi-3's embed_dropout, Gemma 3's rotary_emb_local, old Falcon's maybe_rotary) and those of
# other configs of the family (GPT-2's cross-attention, phi's qk LayerNorms, Falcon-40B's ln_attn,
# DeepSeek-V2-Lite's direct q_proj against V3's q_a/q_b_proj, Falcon's sequential block).
OTHER_VERSIONS_OR_CONFIGS = {
    "block_sparse_moe", "w1", "w2", "w3", "gate_proj", "up_proj", "down_proj", "embed_out", "embed_dropout",
    "rotary_emb_local", "maybe_rotary", "q_attn", "crossattention", "ln_cross_attn", "q_layernorm", "k_layernorm",
    "ln_attn", "ln_mlp", "post_attention_layernorm", "q_proj", "q_a_proj", "q_a_layernorm", "q_b_proj",
    "attention_dropout"}


def estimate_of(report):
    return next(s for s in report.stages if s.name == "estimate")


def tg415(stage):
    return [f for f in stage.findings if f.code == "TG415"]


def test_llama_targets_copied_onto_phi_3_are_rejected_naming_its_fused_modules():
    report = check(TARGETS / "phi3-llama-targets.yml")
    [finding] = tg415(estimate_of(report))
    assert finding.severity == "error" and not report.gates_passed
    assert "['q_proj', 'k_proj', 'v_proj'] match no module" in finding.message
    assert "PEFT adapts only the ones that match (o_proj)" in finding.message
    assert "qkv_proj, o_proj, gate_up_proj, down_proj" in finding.message
    assert finding.key == "lora_target_modules" and finding.line and "all-linear" in finding.hint  # the config's own key


def test_the_estimate_of_phi_3_with_llama_targets_counts_lora_on_o_proj_alone():
    # what PEFT builds: o_proj (3072 -> 3072) in each of the 32 layers, r=16
    stage = estimate_of(check(TARGETS / "phi3-llama-targets.yml"))
    assert stage.stats["model"]["trainable_params"] == 32 * 16 * (3072 + 3072)


def test_phi_3_with_its_own_fused_module_names_is_approved():
    report = check(TARGETS / "phi3-fused-targets.yml")
    assert report.gates_passed and not tg415(estimate_of(report))
    # qkv_proj 3072 -> 9216, o_proj 3072 -> 3072, gate_up_proj 3072 -> 16384, down_proj 8192 -> 3072
    per_layer = 16 * ((3072 + 9216) + (3072 + 3072) + (3072 + 16384) + (8192 + 3072))
    assert estimate_of(report).stats["model"]["trainable_params"] == 32 * per_layer


def test_llamas_attention_projections_are_approved():
    report = check(TARGETS / "llama-qkvo.yaml")
    assert report.gates_passed and not tg415(estimate_of(report))


def test_a_misspelt_target_is_rejected_naming_it_and_the_real_names():
    report = check(TARGETS / "llama-typo.yaml")
    [finding] = tg415(estimate_of(report))
    assert "['o_prj'] match no module of 'meta-llama/Llama-3.2-1B'" in finding.message
    assert "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj" in finding.message
    assert not report.gates_passed


def test_lora_on_the_embedding_and_the_output_head_is_approved_and_counted():
    report = check(TARGETS / "llama-embeddings.yaml")
    assert report.gates_passed and not tg415(estimate_of(report))
    # q_proj 2048 -> 2048, v_proj 2048 -> 512 in 16 layers; the embedding (A: r x 128,256 rows,
    # B: 2048 x r) and the output head (2048 -> 128,256), r=16
    layers = 16 * 16 * ((2048 + 2048) + (2048 + 512))
    assert estimate_of(report).stats["model"]["trainable_params"] == layers + 2 * 16 * (128_256 + 2048)


def test_a_pattern_in_target_modules_is_never_judged_by_module_names():
    report = check(TARGETS / "llama-regex.yaml")
    assert not tg415(estimate_of(report))


def test_gpt2s_fused_c_attn_is_approved_and_counted():
    report = check(TARGETS / "gpt2-c-attn.yaml")
    assert report.gates_passed and not tg415(estimate_of(report))
    assert estimate_of(report).stats["model"]["trainable_params"] == 12 * 16 * (768 + 2304)


def test_no_target_matching_says_peft_stops_the_run():
    result = estimate_stage(context(make_spec(model={"id": "microsoft/Phi-3-mini-4k-instruct"},
                                              lora={"target_modules": ["q_proj", "v_proj"]})))
    [finding] = tg415(result)
    assert "none of them matches, so PEFT stops the run" in finding.message
    assert result.stats["model"]["trainable_params"] == 0


def test_llamas_mlp_names_on_mixtral_are_rejected_and_its_expert_names_are_not():
    # Mixtral's experts are w1/w3/w2 (nn.Linear in transformers 4, fused in 5): never gate/up/down_proj
    arch = load_architecture("mistralai/Mixtral-8x7B-v0.1")
    assert unmatched_targets(arch, ["q_proj", "gate_proj", "up_proj", "down_proj", "w1", "w2", "w3", "gate"]) == [
        "gate_proj", "up_proj", "down_proj"]


@pytest.mark.parametrize("targets", [["model.layers.0.self_attn.q_prj"], ["0"], [r"q_proj|v_proj"], "all-linear"])
def test_dotted_paths_indices_patterns_and_all_linear_are_not_judged(targets):
    assert unmatched_targets(load_architecture("meta-llama/Llama-3.2-1B"), targets) == []


@pytest.mark.parametrize("folder", ["unknown/opt-1.3b", "unknown/acme-decoder", "configs/phi-2-msft",
                                    "configs/gemma-3-4b-it"])
def test_models_whose_module_names_are_not_known_exactly_are_not_judged(folder):
    # OPT and a type nobody counts (read as guesses), phi-2's remote-code release (Wqkv), and a
    # vision tower beside the decoder
    arch = load_architecture(str(DATA / "estimate" / folder))
    assert leaf_names(arch) is None
    assert unmatched_targets(arch, ["no_such_module"]) == []


def test_a_model_built_by_its_own_code_is_not_judged():
    spec = make_spec(model={"id": "microsoft/Phi-3-mini-4k-instruct", "trust_remote_code": True},
                     lora={"target_modules": ["q_proj", "o_proj"]})
    assert not tg415(estimate_stage(context(spec)))


def test_gpt2s_position_embedding_is_counted_as_an_embedding():
    arch = load_architecture("openai-community/gpt2")
    assert lora_param_count(arch, ["wte", "wpe"], 8) == 8 * (50_257 + 768) + 8 * (1024 + 768)


@cache
def meta_leaf_names(path: Path) -> frozenset[str]:
    """The last name part of every module transformers builds from the config at `path`."""
    import torch
    import transformers

    config = json.loads(path.read_text())
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    leaves = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules() if name}
    return frozenset(n for n in leaves if not n.isdigit())  # a ModuleList's indices


JUDGED = [p for p in CONFIGS if leaf_names(from_config(json.loads(p.read_text()))) is not None]


def label(path: Path) -> str:
    return path.stem if path.parent == SHIPPED else path.parent.name


@pytest.mark.parametrize("path", JUDGED, ids=label)
def test_every_module_transformers_builds_is_in_the_known_names(path):
    pytest.importorskip("transformers")
    assert meta_leaf_names(path) <= LEAF_NAMES[from_config(json.loads(path.read_text())).model_type]


@pytest.mark.parametrize("path", JUDGED, ids=label)
def test_the_known_names_beyond_what_transformers_builds_are_other_versions_or_configs(path):
    pytest.importorskip("transformers")
    known = LEAF_NAMES[from_config(json.loads(path.read_text())).model_type]
    assert known - meta_leaf_names(path) <= OTHER_VERSIONS_OR_CONFIGS
