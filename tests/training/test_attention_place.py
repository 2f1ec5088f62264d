"""The attention and precision a run uses are ones the device and the model's class both run (issue 31).

Without flash-attn (no CUDA here) flash_attention_2 falls back, and to a kernel the class accepts:
sdpa for Llama, eager for Gemma-2, which refuses sdpa; an unset default does what transformers'
own default does.
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import DATA, make_spec
from tunegate.training.device import class_support, supported_attention

pytest.importorskip("transformers")
CONFIGS = DATA / "configs"


@pytest.mark.parametrize(("model", "wanted", "used"), [
    ("meta-llama/Llama-3.2-1B", "flash_attention_2", "sdpa"),
    ("meta-llama/Llama-3.2-1B", "sdpa", "sdpa"),
    ("google/gemma-2-2b", "flash_attention_2", "eager"),
    ("google/gemma-2-2b", None, "eager"),
    (str(CONFIGS / "gemma-3-4b-it"), "flash_attention_2", "sdpa"),
])
def test_the_run_loads_a_kernel_this_device_and_the_class_accept(model, wanted, used):
    spec = make_spec(model={"id": model}, training={"attention": wanted})
    assert supported_attention(spec, "cpu") == used


def test_a_model_whose_config_cannot_be_found_keeps_the_spec_kernel():
    spec = make_spec(model={"id": "someone/never-cached-model"}, training={"attention": "eager"})
    assert class_support(spec) is None and supported_attention(spec, "cpu") == "eager"


class _Turing:
    major, minor, name, total_memory = 7, 5, "Tesla T4", 15 * 2**30


def test_bf16_is_not_chosen_on_a_gpu_that_only_emulates_it(monkeypatch):
    torch = pytest.importorskip("torch")
    from tunegate.training.device import supported_precision

    # a T4: compute capability 7.5, where torch can create bf16 tensors (emulation) but has no bf16 units
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *a, **k: _Turing())
    monkeypatch.setattr(torch.cuda, "_check_bf16_tensor_supported", lambda *a, **k: True)
    assert torch.cuda.is_bf16_supported() is True  # what the gate used to ask
    assert supported_precision("bf16", "cuda") == "fp16"
    assert supported_precision("fp32", "cuda") == "fp32"
