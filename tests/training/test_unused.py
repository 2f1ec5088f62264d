"""Trainable parameters a text batch never reaches, as DDP would find them at step 2 (issue 31).

AutoModelForCausalLM builds gemma3 as Gemma3ForConditionalGeneration; LoRA's q_proj/v_proj then
also wrap the SigLIP vision tower, which a text batch never runs.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tunegate.training.unused import unused_trainable  # noqa: E402


def _lora(model):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))


def _tiny_gemma3():
    config = transformers.Gemma3Config(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 300, "sliding_window": 16},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 28, "patch_size": 14}, mm_tokens_per_image=4)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_lora_on_a_multimodal_class_has_parameters_a_text_batch_never_reaches():
    model = _lora(_tiny_gemma3())
    ids = torch.randint(0, 250, (1, 8))
    unused = unused_trainable(model, {"input_ids": ids, "labels": ids})
    assert unused and all("vision_tower" in name for name in unused)
    assert all(p.grad is None for p in model.parameters())  # walked, not backpropagated


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_text_model_reaches_every_trainable_parameter(tiny_cache):
    model = _lora(transformers.AutoModelForCausalLM.from_pretrained(tiny_cache))
    ids = torch.randint(0, 100, (1, 8))
    assert unused_trainable(model, {"input_ids": ids, "labels": ids}) == []
