"""Saving, inspecting and reloading the adapter, and the free-disk check for the full run's checkpoints."""
from __future__ import annotations

import pytest

from tests.support.minirun import load_spec
from tunegate.minirun.adapter_check import check_checkpoint_disk, reload_and_compare
from tunegate.minirun.steps import probe_loss
from tunegate.report import FindingCollector
from tunegate.training.adapter_io import ADAPTER_FILE, check_adapter_file, save_adapter
from tunegate.training.chat_tokens import collate, encode_chats
from tunegate.training.device import RunPlace
from tunegate.training.model import apply_lora, load_model, load_tokenizer

CHAT = [{"role": "user", "content": "Where is my invoice?"},
        {"role": "assistant", "content": "Under Orders: open the order and press Download invoice."}]
PLACE = RunPlace("cpu", "fp32", "sdpa")
# PEFT 0.21 calls a method transformers 5 deprecated; the stage silences this, direct calls do not.
pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


@pytest.fixture
def trained(tiny_cache):
    """A LoRA model whose B matrices are non-zero (as after training), its tokenizer and a probe batch."""
    import torch

    spec = load_spec("good", **{"training.precision": "fp32"})
    out = FindingCollector("mini-run")
    model = apply_lora(load_model(str(tiny_cache), spec, PLACE), spec, out)
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(1)
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(std=0.05)
    tokenizer = load_tokenizer(str(tiny_cache), spec)
    batch = collate(encode_chats(tokenizer, [CHAT], 256), tokenizer.pad_token_id)
    _, logits = probe_loss(model, batch, PLACE, keep_logits=True)
    return spec, model, tokenizer, batch, logits


def test_a_saved_adapter_reloads_to_the_same_weights_and_logits(trained, tmp_path, tiny_cache):
    spec, model, tokenizer, batch, logits = trained
    out = FindingCollector("mini-run")
    saved = save_adapter(model, tokenizer, tmp_path, out)
    stats = reload_and_compare(saved, model, spec, PLACE, batch, logits, out)
    assert not out.kept
    assert stats["reload_max_logit_diff"] == 0.0
    assert saved.file_bytes > 10_000 and len(saved.state) == 16  # A and B for 4 modules x 2 layers


def test_an_adapter_holding_nan_is_rejected(trained, tmp_path):
    import torch

    spec, model, tokenizer, _, _ = trained
    with torch.no_grad():
        next(p for n, p in model.named_parameters() if "lora_B" in n)[0, 0] = float("nan")
    out = FindingCollector("mini-run")
    save_adapter(model, tokenizer, tmp_path, out)
    [bad] = out.kept
    assert bad.code == "TG525" and "NaN or Inf" in bad.message and "1 of 16" in bad.message


def test_an_adapter_file_without_lora_tensors_is_rejected(trained, tmp_path):
    from safetensors.torch import save_file

    _, model, tokenizer, _, _ = trained
    saved = save_adapter(model, tokenizer, tmp_path, FindingCollector("mini-run"))
    save_file({}, str(tmp_path / ADAPTER_FILE))  # what an "empty" 443-byte style adapter holds
    out = FindingCollector("mini-run")
    check_adapter_file(saved.__class__(tmp_path, saved.state, (tmp_path / ADAPTER_FILE).stat().st_size,
                                       saved.chat_template), out)
    assert [f.code for f in out.kept] == ["TG525"] and "no lora_A/lora_B" in out.kept[0].message


def test_an_adapter_changed_on_disk_fails_the_reload_comparison(trained, tmp_path, tiny_cache):
    from safetensors.torch import load_file, save_file

    spec, model, tokenizer, batch, logits = trained
    saved = save_adapter(model, tokenizer, tmp_path, FindingCollector("mini-run"))
    tensors = load_file(str(tmp_path / ADAPTER_FILE))
    first_b = next(k for k in tensors if "lora_B" in k)
    tensors[first_b] = tensors[first_b] + 1.0
    save_file(tensors, str(tmp_path / ADAPTER_FILE))
    out = FindingCollector("mini-run")
    reload_and_compare(saved, model, spec, PLACE, batch, logits, out)
    messages = [f.message for f in out.kept if f.code == "TG523"]
    assert any("1 differ" in m for m in messages) and any("logits" in m for m in messages)


def test_a_tokenizer_that_lost_its_template_on_save_is_caught(trained, tmp_path, tiny_cache):
    spec, model, tokenizer, batch, logits = trained
    saved = save_adapter(model, tokenizer, tmp_path, FindingCollector("mini-run"))
    (tmp_path / "chat_template.jinja").unlink()
    out = FindingCollector("mini-run")
    reload_and_compare(saved, model, spec, PLACE, batch, logits, out)
    assert [f.code for f in out.kept] == ["TG524"]


def test_a_save_that_fails_is_reported(trained, tmp_path):
    _, model, tokenizer, _, _ = trained
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    out = FindingCollector("mini-run")
    assert save_adapter(model, tokenizer, blocked, out) is None
    assert [f.code for f in out.kept] == ["TG532"]


def test_checkpoints_larger_than_the_free_disk_are_rejected(tmp_path):
    spec = load_spec("good", **{"full_run.output_dir": tmp_path / "run", "training.max_steps": 5000})
    out = FindingCollector("mini-run")
    stats = check_checkpoint_disk(spec, adapter_bytes=2**20, trainable_params=10**14, train_records=12, out=out)
    assert stats["checkpoints"] == 5000 // 500
    assert [f.code for f in out.kept] == ["TG529"]


def test_checkpoints_that_fit_pass_and_are_counted_from_epochs(tmp_path):
    spec = load_spec("good", **{"full_run.output_dir": tmp_path, "training.max_steps": None, "training.epochs": 3.0,
                                "full_run.save_steps": 100})
    out = FindingCollector("mini-run")
    stats = check_checkpoint_disk(spec, adapter_bytes=30_000, trainable_params=7168, train_records=40_000, out=out)
    assert not out.kept
    assert stats["checkpoints"] == (40_000 * 3 // 4) // 100  # micro batch 4, accumulation 1, one GPU
    assert stats["checkpoint_bytes_estimate"] == stats["checkpoints"] * (30_000 + 8 * 7168) + 30_000


def test_the_reload_reads_no_second_base_and_leaves_the_trained_adapter_active(trained, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM

    spec, model, tokenizer, batch, logits = trained
    saved = save_adapter(model, tokenizer, tmp_path, FindingCollector("mini-run"))
    loads = []
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: loads.append(a))
    out = FindingCollector("mini-run")
    reload_and_compare(saved, model, spec, PLACE, batch, logits, out)
    assert loads == [] and not out.kept  # seconds at any model size: no base re-read from disk (issue 31)
    assert model.active_adapter == "default" and list(model.peft_config) == ["default"]


def test_a_file_tensor_the_model_cannot_place_is_reported(trained, tmp_path):
    import torch
    from safetensors.torch import load_file, save_file

    spec, model, tokenizer, batch, logits = trained
    saved = save_adapter(model, tokenizer, tmp_path, FindingCollector("mini-run"))
    tensors = load_file(str(tmp_path / ADAPTER_FILE))
    name = next(k for k in tensors if "lora_A" in k)
    tensors[name.replace("layers.0.", "layers.7.")] = torch.zeros_like(tensors[name])  # a layer the model lacks
    save_file(tensors, str(tmp_path / ADAPTER_FILE))
    out = FindingCollector("mini-run")
    reload_and_compare(saved, model, spec, PLACE, batch, logits, out)
    assert any("unplaced" in f.message for f in out.kept if f.code == "TG523")
