"""The built-in tunegate/tiny-llama: built offline, deterministic, loaded like any real model."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tunegate.training.tiny_model import (TINY_ID, VERSION, build_tiny_model, ensure_tiny_model, make_variant,
                                          resolve_model_id)

MESSAGES = [{"role": "user", "content": "How do I reset my password?"},
            {"role": "assistant", "content": "Open Settings."}]


def test_two_builds_write_identical_files(tmp_path):
    first, second = build_tiny_model(tmp_path / "a"), build_tiny_model(tmp_path / "b")
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    assert "model.safetensors" in names and "tokenizer.json" in names
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_builtin_id_loads_through_the_auto_classes(tiny_cache):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_id(TINY_ID)
    assert Path(path) == tiny_cache
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert model.config.model_type == "llama"
    assert model.config.num_hidden_layers == 2
    assert model.config.vocab_size >= len(tokenizer)
    assert tokenizer.is_fast and tokenizer.chat_template
    assert tokenizer.pad_token_id not in (None, tokenizer.eos_token_id)


def test_other_ids_and_paths_pass_through_unchanged():
    assert resolve_model_id("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B"
    assert resolve_model_id("/models/llama") == "/models/llama"


def test_chat_template_trains_on_the_reply_and_its_eos_only(tiny_cache):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_cache)
    out = tokenizer.apply_chat_template(MESSAGES, return_dict=True, return_assistant_tokens_mask=True)
    trained = [t for t, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tokenizer.decode(trained) == "Open Settings.</s>"
    assert out["input_ids"][0] == tokenizer.bos_token_id


def test_second_resolve_reuses_the_cached_build(tiny_cache):
    before = (tiny_cache / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_model() == tiny_cache
    assert (tiny_cache / "model.safetensors").stat().st_mtime_ns == before


@pytest.mark.slow  # two interpreters importing torch at once: ~10-20 s on a shared 2-core machine
def test_two_processes_building_at_once_both_get_a_complete_model(tmp_path):
    code = "from tunegate.training.tiny_model import ensure_tiny_model; print(ensure_tiny_model())"
    env = {**_env(), "TUNEGATE_CACHE": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    paths = {out.strip() for out, _ in outputs}
    assert len(paths) == 1
    assert (Path(paths.pop()) / "model.safetensors").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [f"tiny-llama-{VERSION}"]  # no temporary build left behind


@pytest.mark.parametrize("pad, expected", [("eos", "</s>"), (None, None), ("distinct", "<pad>")])
def test_variants_change_only_the_pad_token(tiny_cache, tmp_path, pad, expected):
    from transformers import AutoTokenizer

    variant = make_variant(tiny_cache, tmp_path / "variant", pad=pad)
    tokenizer = AutoTokenizer.from_pretrained(variant)
    assert tokenizer.pad_token == expected
    assert tokenizer.chat_template == AutoTokenizer.from_pretrained(tiny_cache).chat_template


def test_variant_without_chat_template_has_none(tiny_cache, tmp_path):
    from transformers import AutoTokenizer

    variant = make_variant(tiny_cache, tmp_path / "base", chat_template=False)
    assert AutoTokenizer.from_pretrained(variant).chat_template is None


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "TUNEGATE_CACHE"}


def test_shipped_config_of_the_tiny_model_matches_what_is_built(tiny_cache):
    """The estimate reads the shipped config without building (or importing torch)."""
    import json

    from tunegate.training import tiny_model

    shipped = json.loads((Path(tiny_model.__file__).parents[1] / "data" / "model_configs"
                          / "tunegate--tiny-llama.json").read_text())
    built = json.loads((tiny_model.ensure_tiny_model() / "config.json").read_text())
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "tie_word_embeddings"):
        assert shipped[key] == built[key], key
