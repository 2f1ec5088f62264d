"""A k-bit base keeps what it does not quantise in fp32 after prepare_model_for_kbit_training (issue 31).

tunegate's trainer (tunegate.training.model.load_model), axolotl and TRL call it on a 4-bit or 8-bit
base: PEFT casts every bf16/fp16 parameter that is not a Params4bit to fp32, the embeddings and the
untied lm_head first among them. On Llama-3.1 that is 2 x vocab x hidden values at 2 more bytes each.
"""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import make_spec
from tunegate.estimate.run import estimate_run
from tunegate.facts import GateFacts

GIB = 2**30


def weights_gib(model: str, quantization: str, method: str, cast: bool) -> float:
    spec = make_spec(model={"id": model, "quantization": quantization}, training={"method": method})
    est = estimate_run(spec, GateFacts())
    setup = est.setup.model_copy(update={"kbit_fp32_rest": cast})
    from tunegate.estimate.memory import weights_bytes
    from tunegate.estimate.run import resolve_architecture

    return weights_bytes(resolve_architecture(spec), setup) / GIB


@pytest.mark.parametrize(("model", "extra_gib"), [("meta-llama/Llama-3.1-8B", 1.96),
                                                  ("meta-llama/Llama-3.1-70B", 3.91)])
def test_qlora_counts_the_fp32_embeddings_and_head(model, extra_gib):
    added = weights_gib(model, "4bit", "qlora", True) - weights_gib(model, "4bit", "qlora", False)
    assert added == pytest.approx(extra_gib, abs=0.02)


def test_the_spec_estimate_applies_the_cast_for_k_bit_bases_only():
    qlora = estimate_run(make_spec(model={"id": "meta-llama/Llama-3.1-8B", "quantization": "4bit"},
                                   training={"method": "qlora"}), GateFacts())
    lora = estimate_run(make_spec(model={"id": "meta-llama/Llama-3.1-8B"}), GateFacts())
    assert qlora.setup.kbit_fp32_rest is True
    assert lora.memory.breakdown_gib["weights"] == pytest.approx(8.03e9 * 2 / GIB, rel=0.01)  # bf16, no cast
