"""The settings axolotl and TRL configs carry, in the estimate: 8-bit optimizer states and base, the
modules saved in full, and what a packed step trains."""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import make_spec
from tunegate.estimate.families import load_architecture
from tunegate.estimate.memory import memory_terms
from tunegate.estimate.run import estimate_run
from tunegate.estimate.setup import setup_from_spec
from tunegate.facts import GateFacts

ARCH = load_architecture("meta-llama/Llama-3.2-1B")  # vocab 128256, hidden 2048, tied embeddings


def terms(**training):
    spec = make_spec(training=training) if training else make_spec()
    return memory_terms(ARCH, setup_from_spec(spec))


def test_an_8bit_optimizer_keeps_a_quarter_of_the_adamw_states():
    assert terms(optimizer="adamw_8bit")["optimizer_states"] == pytest.approx(terms()["optimizer_states"] / 4)
    assert terms(optimizer="paged_adamw_32bit")["optimizer_states"] == terms()["optimizer_states"]


def test_an_8bit_base_holds_its_linear_layers_in_one_byte():
    eight = memory_terms(ARCH, setup_from_spec(make_spec(model={"quantization": "8bit"})))["weights"]
    linear = ARCH.num_layers * ARCH.layer_linear_params()
    rest = ARCH.param_count() - linear  # embeddings, norms: fp32 after prepare_model_for_kbit_training
    assert terms()["weights"] - eight == pytest.approx(linear - 2 * rest)  # 2 -> 1 byte per linear weight, 2 -> 4 the rest


def test_modules_to_save_are_trained_in_full_beside_the_adapter():
    spec = make_spec(lora={"modules_to_save": ["embed_tokens", "lm_head"]})
    est = estimate_run(spec)
    saved = 2 * 128256 * 2048  # both names resolve to the one tied matrix's size each
    assert est.memory.trainable_params == estimate_run(make_spec()).memory.trainable_params + saved
    assert est.memory.breakdown_gib["saved_modules"] > 0


def test_an_unpacked_step_trains_records_a_packed_step_trains_full_rows():
    facts = GateFacts.model_validate({"tokens": {"train_tokens": 300_000, "trainable_tokens": 150_000,
                                                 "records": 1000, "sampled": False, "max_seq_len": 2048,
                                                 "mean_tokens_per_record": 300.0}})
    common = {"estimate": {"dataset_tokens": None}}
    unpacked = estimate_run(make_spec(training={"max_steps": 100, "epochs": None}, **common), facts)
    packed = estimate_run(make_spec(training={"max_steps": 100, "epochs": None, "packing": True}, **common), facts)
    assert unpacked.total_tokens == 100 * 8 * 300  # micro 2 x accum 4 records of 300 tokens a step
    assert packed.total_tokens == 100 * 8 * 2048
