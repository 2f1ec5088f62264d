"""TG121 judges alpha / r for the recipes that scale alpha with the rank, and spares those that fix it.

TRL's "LoRA Without Regret" recipe (huggingface/trl docs/source/lora_without_regret.md) keeps alpha
at 16 (SFT, r 256) or 32 (RL, r 1-32) whatever the rank, so alpha / r is far from 1-2 on purpose.
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import BASE
from tests.support.paths import DATA
from tunegate.spec.check import parse_spec
from tunegate.spec.rules import check_rules
from tunegate.spec.model import Spec
from tunegate.spec.yaml_loader import load


def tg121(r: int, alpha: float):
    spec = Spec.model_validate({**BASE, "lora": {**BASE["lora"], "r": r, "alpha": alpha}})
    return [f for f in check_rules(spec, load("lora: {}"), "spec.yaml") if f.code == "TG121"]


@pytest.mark.parametrize(("r", "alpha"), [(256, 16), (1, 32), (8, 32), (128, 16)])
def test_a_fixed_alpha_of_16_or_32_is_the_lora_without_regret_recipe_not_a_mistake(r, alpha):
    assert tg121(r, alpha) == []


def test_an_alpha_far_from_r_and_2r_names_both_kinds_of_recipe():
    (f,) = tg121(64, 1)
    assert "recipes that scale alpha with the rank" in f.message
    assert "Set lora.alpha to 64 or 128" in f.hint and "LoRA Without Regret" in f.hint


def test_trls_lora_without_regret_config_passes_the_spec_stage_without_tg121():
    parsed = parse_spec(DATA / "configs" / "trl" / "sft-lora-without-regret.yaml")
    assert parsed.kind == "trl" and parsed.spec is not None
    assert (parsed.spec.lora.r, parsed.spec.lora.alpha) == (256, 16)
    assert "TG121" not in {f.code for f in parsed.result.findings}
