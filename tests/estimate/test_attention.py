"""The attention kernel the model's class accepts: refused when named (TG417), its fallback sized when not (TG418).

Gemma-2's class refuses sdpa (softcapping) in transformers 5: a spec naming it passed every gate and
failed to load on the H200 (issue 31). Left unset, transformers falls back to eager attention, whose
seq x seq scores the estimate must count.
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import context, make_spec
from tunegate.estimate.run import estimate_run
from tunegate.estimate.stage import run_stage
from tunegate.facts import GateFacts

pytest.importorskip("transformers")
GEMMA_2 = "google/gemma-2-2b"  # a config tunegate ships


def attention_findings(spec):
    return [(f.code, f.severity, f.key) for f in run_stage(context(spec)).findings if f.code in ("TG417", "TG418")]


def test_sdpa_named_for_gemma_2_is_an_error_naming_what_its_class_accepts():
    spec = make_spec(model={"id": GEMMA_2}, training={"attention": "sdpa"})
    assert attention_findings(spec) == [("TG417", "error", "training.attention")]
    found = next(f for f in run_stage(context(spec)).findings if f.code == "TG417")
    assert "Gemma2ForCausalLM" in found.message and "eager or flash_attention_2 kernel" in found.hint


def test_unset_attention_on_gemma_2_is_sized_as_the_eager_kernel_transformers_falls_back_to():
    unset, eager = make_spec(model={"id": GEMMA_2}), make_spec(model={"id": GEMMA_2}, training={"attention": "eager"})
    assert attention_findings(unset) == [("TG418", "info", "training.attention")]
    assert attention_findings(eager) == []
    planned, named = estimate_run(unset, GateFacts()), estimate_run(eager, GateFacts())
    assert planned.setup.attention == "eager"
    assert planned.memory.peak_gib == pytest.approx(named.memory.peak_gib)


def test_a_kernel_the_class_accepts_gets_no_finding():
    assert attention_findings(make_spec(model={"id": GEMMA_2}, training={"attention": "flash_attention_2"})) == []
    assert attention_findings(make_spec(training={"attention": "sdpa"})) == []  # Llama 3.2 1B


def test_an_axolotl_config_asking_sdpa_of_gemma_2_is_rejected_and_without_the_flag_passes(tmp_path):
    from tests.support.paths import DATA
    from tunegate.gate import check

    config = DATA / "configs" / "axolotl" / "gemma2-sdp-attention.yml"
    asked = check(config)
    assert [f.code for f in asked.findings if f.severity == "error"] == ["TG417"]
    unset = tmp_path / "gemma2.yml"
    text = config.read_text().replace("sdp_attention: true\n", "")
    unset.write_text(text.replace("../data/", f"{config.parent.parent}/data/"))
    quiet = check(unset)
    assert quiet.gates_passed and "TG418" in {f.code for f in quiet.findings}
