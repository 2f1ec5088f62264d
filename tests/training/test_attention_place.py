"""The attention a run loads is one the device and the model's class both run (issue 31).

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
