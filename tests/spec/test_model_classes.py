"""What the installed transformers' model classes accept as attention, read from their source.

The refusals issue 31 lists for transformers 5.25 (a Gemma-2 + sdpa spec passed every gate, then
failed to load on the H200), and the whole table held to the real classes' attributes.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tunegate.spec.model_classes import attention_support, effective_attention

pytest.importorskip("transformers")


@pytest.mark.parametrize("model_type", ["gemma2", "gpt_oss", "bloom", "mpt", "gpt_neo", "granite_swa",
                                        "granitemoe_swa", "vaultgemma"])
def test_these_classes_refuse_sdpa(model_type):
    assert attention_support(model_type).accepts("sdpa") is False


@pytest.mark.parametrize("model_type", ["gemma3", "gemma4", "llama4", "mllama", "bloom", "mpt"])
def test_these_classes_refuse_flash_attention(model_type):
    assert attention_support(model_type).accepts("flash_attention_2") is False


@pytest.mark.parametrize("model_type", ["gemma3", "llama4"])
def test_auto_model_for_causal_lm_builds_the_multimodal_class_where_the_mapping_says(model_type):
    # gemma3's text-only config builds Gemma3ForConditionalGeneration, whose image path refuses flash attention
    assert attention_support(model_type).class_name in ("Gemma3ForConditionalGeneration", "Llama4ForCausalLM")


@pytest.mark.parametrize("model_type", ["gpt_oss", "granite_swa"])
def test_flash_attention_2_there_is_a_hub_kernel_download_unless_hub_kernels_are_allowed(model_type):
    support = attention_support(model_type)
    assert support.accepts("flash_attention_2") is False
    assert support.accepts("flash_attention_2", hub_kernels=True) is True
    assert "Hugging Face Hub" in support.refusal("flash_attention_2")


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "mixtral"])
def test_common_decoders_accept_every_kernel(model_type):
    assert attention_support(model_type).accepted() == ["eager", "sdpa", "flash_attention_2"]


def test_a_type_whose_class_is_another_types_is_found_in_that_file():
    assert attention_support("exaone").class_name == "LlamaForCausalLM"


def test_an_unknown_or_remote_code_type_is_unknown():
    assert attention_support("my_remote_arch") is None
    assert attention_support("") is None


def test_an_unset_default_falls_back_as_transformers_does_and_a_named_kernel_is_kept():
    gemma2 = attention_support("gemma2")
    assert effective_attention("sdpa", gemma2, explicit=False) == "eager"
    assert effective_attention("sdpa", gemma2, explicit=True) == "sdpa"  # the load refuses it: TG417
    assert effective_attention("flash_attention_2", attention_support("gemma3"), explicit=False) == "sdpa"
    assert effective_attention("sdpa", None, explicit=False) == "sdpa"


def test_it_is_read_without_importing_torch_or_transformers():
    code = ("import sys; from tunegate.spec.model_classes import attention_support as a; "
            "assert a('gemma2').accepts('sdpa') is False; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_without_transformers_installed_nothing_is_known():
    # The module alone (it imports only the standard library), in an interpreter without site-packages.
    code = ("import importlib.util as u; "
            f"s = u.spec_from_file_location('m', {str(ROOT / 'tunegate/spec/model_classes.py')!r}); "
            "import sys; m = sys.modules['m'] = u.module_from_spec(s); s.loader.exec_module(m); "
            "print(m.attention_support('gemma2'))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


def _real(model_type):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    cls = MODEL_FOR_CAUSAL_LM_MAPPING[CONFIG_MAPPING[model_type]]
    listed = cls._compatible_flash_implementations
    return cls.__name__, bool(cls._supports_sdpa), bool(cls._supports_flash_attn), \
        tuple(listed) if listed is not None else None


def _read(model_type):
    s = attention_support(model_type)
    return s.class_name, s.sdpa, s.flash, s.compatible_flash


@pytest.mark.parametrize("model_type", ["llama", "gemma2", "gemma3", "gpt_oss", "bloom", "mllama", "exaone",
                                        "qwen3_moe", "granite_swa", "gpt2"])
def test_the_source_reading_agrees_with_the_imported_class(model_type):
    pytest.importorskip("torch")
    assert _read(model_type) == _real(model_type)


@pytest.mark.slow
def test_every_causal_lm_class_of_the_installed_transformers_agrees():
    pytest.importorskip("torch")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    wrong = [t for t in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES if _read(t) != _real(t)]
    assert wrong == []
