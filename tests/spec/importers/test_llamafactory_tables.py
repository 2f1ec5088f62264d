"""LLaMA-Factory's defaults, as copied, pinned to the commit they were copied from.

Changing a value here means re-reading LLaMA-Factory's hparams at a new commit: update COPIED_FROM
with it. Where llamafactory is installed, its own dataclasses must agree with the copy.
"""
from __future__ import annotations

import dataclasses
import importlib.util

import pytest

from tunegate.spec.importers.llamafactory_tables import (
    COPIED_FROM,
    DEFAULTS,
    MEDIA_TEMPLATES,
    REAL_NEAR,
    STAGES,
    TEXT_TEMPLATES,
    UNHONOURED,
)

# Read from src/llamafactory/hparams/{finetuning,data,model}_args.py at COPIED_FROM.
PINNED = {
    "stage": "sft", "finetuning_type": "lora", "lora_rank": 8, "lora_alpha": None, "lora_dropout": 0.0,
    "lora_target": "all", "template": None, "dataset_dir": "data", "cutoff_len": 2048, "val_size": 0.0,
    "train_on_prompt": False, "mask_history": False, "packing": None, "quantization_bit": None,
    "quantization_method": "bnb", "quantization_type": "nf4", "double_quantization": True, "flash_attn": "auto",
    "disable_gradient_checkpointing": False, "model_revision": "main", "trust_remote_code": False,
    "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "learning_rate": 5e-5,
    "num_train_epochs": 3.0, "max_steps": -1, "lr_scheduler_type": "linear", "warmup_steps": 0,
    "warmup_ratio": 0.0, "weight_decay": 0.0, "max_grad_norm": 1.0, "seed": 42, "optim": "adamw_torch_fused",
    "bf16": False, "fp16": False, "do_train": False,
}


def test_the_defaults_are_the_ones_read_at_the_pinned_commit():
    assert COPIED_FROM == "LLaMA-Factory 0.9.6.dev0, hiyouga/LLaMA-Factory@ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30"
    assert DEFAULTS == PINNED


def test_the_stages_are_finetuning_arguments_choices():
    assert sorted(STAGES) == ["dpo", "kto", "ppo", "pt", "rm", "sft"]


def test_a_key_is_either_mapped_unhonoured_or_a_real_near_miss_never_two():
    assert not (set(UNHONOURED) & REAL_NEAR) and not (set(DEFAULTS) & REAL_NEAR)


def test_the_templates_are_the_124_registered_at_the_pinned_commit_with_the_media_they_take():
    assert len(TEXT_TEMPLATES) + len(MEDIA_TEMPLATES) == 124 and not TEXT_TEMPLATES & MEDIA_TEMPLATES.keys()
    assert MEDIA_TEMPLATES["qwen3_vl_nothink"] == ("image", "video") and MEDIA_TEMPLATES["qwen2_audio"] == ("audio",)
    assert MEDIA_TEMPLATES["qwen2_omni"] == ("image", "video", "audio")
    assert {"qwen3", "llama3", "empty"} <= TEXT_TEMPLATES


@pytest.mark.skipif(importlib.util.find_spec("llamafactory") is None, reason="llamafactory is not installed")
def test_the_installed_llamafactory_registers_the_same_templates():  # pragma: no cover - only where installed
    from llamafactory.data.template import TEMPLATES

    takes = {name: tuple(m for m in ("image", "video", "audio") if getattr(t.mm_plugin, f"{m}_token") is not None)
             for name, t in TEMPLATES.items()}
    assert {name: media for name, media in takes.items() if media} == MEDIA_TEMPLATES
    assert set(takes) == TEXT_TEMPLATES | MEDIA_TEMPLATES.keys()


@pytest.mark.skipif(importlib.util.find_spec("llamafactory") is None, reason="llamafactory is not installed")
def test_the_installed_llamafactory_agrees_with_the_copy():  # pragma: no cover - only where it is installed
    from llamafactory.hparams import DataArguments, FinetuningArguments, ModelArguments

    fields = {f.name: f.default for cls in (FinetuningArguments, DataArguments, ModelArguments)
              for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    ours = {k: v for k, v in DEFAULTS.items() if k in fields}
    assert {k: fields[k] for k in ours} == ours  # its enums (flash_attn, quantization_method) are StrEnums
