"""The mini-run measures how far its steps moved the model, not only whether the loss is finite.

Issue 11: on the random tiny model `learning_rate: 50` in fp32 kept a finite loss and passed with
warnings. The update-to-weight ratio ||(alpha/r) B A|| / ||W|| of every adapted module is checked
after the steps (TG535); a whole LoRA fine-tune ends near 0.1 (Hu et al. 2021, table 7).
"""
from __future__ import annotations

import math

import pytest

from tests.support.minirun import DATA, codes, finding, load_spec, run_stage
from tunegate.report import GateReport
from tunegate.spec.check import read_spec

pytestmark = pytest.mark.slow


def test_the_ratio_is_computed_without_forming_the_update_and_matches_the_direct_norm():
    import torch
    from peft import LoraConfig, get_peft_model

    from tunegate.minirun.update_ratio import update_ratios

    torch.manual_seed(0)
    model = get_peft_model(torch.nn.Sequential(torch.nn.Linear(48, 32)),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["0"]))
    layer = model.base_model.model[0]
    with torch.no_grad():
        layer.lora_B["default"].weight.normal_(0, 0.3)
        delta = layer.scaling["default"] * layer.lora_B["default"].weight @ layer.lora_A["default"].weight
        direct = float(delta.norm() / layer.base_layer.weight.norm())
    [(name, ratio)] = update_ratios(model).items()
    assert name.endswith("0") and ratio == pytest.approx(direct, rel=1e-5)


def test_a_good_spec_records_a_small_ratio(tiny_cache):
    result, _ = run_stage(load_spec("good"))
    ratio = result.stats["update_ratio"]
    assert result.status == "passed" and 0 < ratio["ratio"] < 0.2  # 0.074 at learning rate 1e-3
    assert ratio["module"].endswith("_proj")


def test_an_out_of_scale_learning_rate_is_rejected_though_the_loss_stays_finite(tiny_cache):
    spec_result, spec = read_spec(DATA / "lr_out_of_scale.yaml")
    assert spec_result.status == "passed"  # a warning (TG120) only: the spec stage cannot tell
    result, _ = run_stage(spec)
    assert result.status == "failed"
    assert all(math.isfinite(x) for x in result.stats["losses"])
    out_of_scale = finding(result, "TG535")
    assert out_of_scale.key == "training.learning_rate" and out_of_scale.severity == "error"
    assert result.stats["update_ratio"]["ratio"] > 100
    assert "adapter_bytes" not in result.stats  # no save of an adapter that overwrote its base


def test_the_issues_learning_rate_50_in_fp32_is_rejected_by_the_spec_and_by_the_mini_run(tiny_cache):
    spec_result, _ = read_spec(DATA.parent / "spec" / "lr_absurd.yaml")
    assert "TG125" in codes(spec_result)
    # past the spec stage (as a hand-built Spec would be), the mini-run rejects it on its own
    result, _ = run_stage(load_spec("good", **{"training.learning_rate": 50.0, "training.precision": "fp32"}))
    assert all(math.isfinite(x) for x in result.stats["losses"])
    assert result.status == "failed" and "TG535" in codes(result)


def test_a_mini_run_on_the_tiny_model_says_what_it_cannot_prove(tiny_cache):
    result, _ = run_stage(load_spec("good"))
    note = finding(result, "TG536")
    assert note.severity == "info" and "cannot prove" in note.message
    report = GateReport.from_stages([result])
    assert any("built-in random tiny model" in c and "cannot prove" in c for c in report.caveats)


def test_an_llm_int8_base_weight_is_measured_from_its_rows_and_scales():
    import torch

    from tunegate.minirun.update_ratio import _weight_norm

    dense = torch.tensor([[0.5, -1.0], [2.0, 0.25]])
    scales = dense.abs().amax(dim=1)  # bitsandbytes' row-wise absmax
    rows = torch.round(dense / scales.unsqueeze(1) * 127).to(torch.int8)

    class Int8Weight(torch.Tensor):  # the two attributes bitsandbytes' Int8Params carries
        pass

    weight = rows.as_subclass(Int8Weight)
    weight.CB, weight.SCB = rows, scales
    assert _weight_norm(weight) == pytest.approx(float(dense.norm()), rel=1e-2)
    assert _weight_norm(None) is None


@pytest.mark.skipif(not __import__("importlib").util.find_spec("bitsandbytes"), reason="needs bitsandbytes")
def test_a_4_bit_base_weight_is_dequantised_for_the_ratio():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("bitsandbytes' 4-bit kernels need a CUDA GPU")
    import bitsandbytes as bnb

    from tunegate.minirun.update_ratio import _weight_norm

    layer = bnb.nn.Linear4bit(64, 64, quant_type="nf4").cuda()  # quantised on the move to the GPU
    dense = bnb.functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state)
    assert _weight_norm(layer.weight) == pytest.approx(float(dense.float().norm()))
