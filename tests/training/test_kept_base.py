"""A sweep candidate's training takes the base its mini-run loaded, in the same process, as loaded again.

The mini-run runs here in the test's process (as a candidate's job runs it, `kept_base.allow()`
standing in for the job's start) on the tiny model; the trainer after it, too. Each test allows
keeping through monkeypatch, so nothing outlives it.
"""
from __future__ import annotations

import pytest

from tests.support.minirun import load_spec, run_stage
from tunegate.fullrun.trainer import KEPT_BASE, train
from tunegate.training import kept_base
from tunegate.training.device import RunPlace
from tunegate.training.model import load_key, load_model

pytestmark = pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning")


def _unload_gives_modules_to_save_as_loaded() -> bool:
    """PEFT 0.22 on; up to 0.21 `unload` put the trained copy of such a module in the base."""
    import peft
    from packaging.version import Version

    return Version(peft.__version__) >= Version("0.22")


MODULES_TO_SAVE = pytest.param({"lora.modules_to_save": ["lm_head"]}, marks=pytest.mark.skipif(
    not _unload_gives_modules_to_save_as_loaded(), reason="PEFT < 0.22 keeps no base with modules_to_save"))


@pytest.fixture
def allowed(monkeypatch):
    """This process is a candidate's job; what it keeps is dropped after the test."""
    monkeypatch.setattr(kept_base, "_allowed", True)
    monkeypatch.setattr(kept_base, "_after_load", None)
    monkeypatch.setattr(kept_base, "_kept", None)


def _mini_run(spec):
    """The mini-run stage in this process; torch's threads put back as the job puts them back."""
    import torch

    threads = torch.get_num_threads()
    result, _ = run_stage(spec)
    torch.set_num_threads(threads)
    assert result.status == "passed", result.findings
    return result


def _key(tiny_cache, spec, precision="bf16"):
    return load_key(str(tiny_cache), spec, RunPlace("cpu", precision, "sdpa"))


def test_the_mini_runs_cuda_and_the_trainers_first_gpu_are_one_load():
    # the mini-run places on "cuda", the trainer on the TrainingArguments' device, "cuda:0"
    spec = load_spec("good")

    def on(device):
        return load_key("m", spec, RunPlace(device, "bf16", "sdpa"))

    assert on("cuda") == on("cuda:0") and on("cuda") != on("cuda:1")


def test_a_mini_run_keeps_no_base_where_its_process_did_not_allow_it(tiny_cache, monkeypatch):
    monkeypatch.setattr(kept_base, "_kept", None)
    spec = load_spec("good")
    _mini_run(spec)
    assert kept_base._kept is None and kept_base.take(_key(tiny_cache, spec)) is None


def test_the_kept_base_is_the_model_as_loaded_without_its_adapter(tiny_cache, allowed):
    import torch

    spec = load_spec("good")
    _mini_run(spec)
    base = kept_base.take(_key(tiny_cache, spec))
    assert base is not None
    assert not any("lora" in name for name, _ in base.named_parameters())
    assert not any(p.requires_grad for p in base.parameters())
    fresh = load_model(str(tiny_cache), spec, RunPlace("cpu", "bf16", "sdpa")).state_dict()
    kept = base.state_dict()
    assert kept.keys() == fresh.keys() and all(torch.equal(kept[k], fresh[k]) for k in fresh)
    assert kept_base.take(_key(tiny_cache, spec)) is None  # given once


def test_a_base_loaded_another_way_is_not_given_and_not_kept(tiny_cache, allowed):
    spec = load_spec("good")
    _mini_run(spec)
    assert kept_base.take(_key(tiny_cache, spec, precision="fp32")) is None  # the trainer loads fp32
    assert kept_base.take(_key(tiny_cache, spec)) is None  # dropped: no second copy beside a fresh load


def test_a_base_with_modules_to_save_is_given_as_loaded_never_with_the_trained_copy(tiny_cache, allowed):
    import torch

    spec = load_spec("good", **{"lora.modules_to_save": ["lm_head"]})
    _mini_run(spec)
    base = kept_base.take(_key(tiny_cache, spec))
    if not _unload_gives_modules_to_save_as_loaded():
        assert base is None
        return
    assert base is not None and not any(p.requires_grad for p in base.parameters())
    fresh = load_model(str(tiny_cache), spec, RunPlace("cpu", "bf16", "sdpa")).state_dict()
    kept = base.state_dict()
    assert kept.keys() == fresh.keys() and all(torch.equal(kept[k], fresh[k]) for k in fresh)


def test_a_base_left_trainable_after_its_adapter_is_off_is_not_kept(tiny_cache, allowed):
    from tunegate.report import FindingCollector
    from tunegate.training.model import apply_lora

    spec = load_spec("good")
    model = load_model(str(tiny_cache), spec, RunPlace("cpu", "bf16", "sdpa"))
    kept_base.loaded()
    peft_model = apply_lora(model, spec, FindingCollector("mini-run"))
    model.get_output_embeddings().weight.requires_grad_(True)  # a base weight trained beside LoRA
    kept_base.keep(_key(tiny_cache, spec), peft_model)
    assert kept_base.take(_key(tiny_cache, spec)) is None


@pytest.mark.parametrize("overrides", [{}, {"training.gradient_checkpointing": True},  # hooks left on the base
                                       {"lora.target_modules": "all-linear"}, MODULES_TO_SAVE])
def test_the_training_on_the_kept_base_computes_what_a_fresh_load_does(tiny_cache, allowed, tmp_path, overrides):
    spec = load_spec("good", **overrides)
    lines: list[str] = []
    fresh = train(spec, output_dir=tmp_path / "fresh", max_steps=3, log=lines.append, checkpoints=False)
    assert fresh.ok and KEPT_BASE not in lines
    _mini_run(spec)
    lines.clear()
    kept = train(spec, output_dir=tmp_path / "kept", max_steps=3, log=lines.append, checkpoints=False)
    assert kept.ok and KEPT_BASE in lines, lines
    assert [(s.step, s.loss, s.grad_norm) for s in kept.steps] == [(s.step, s.loss, s.grad_norm) for s in fresh.steps]
    assert kept.val_loss == fresh.val_loss


@pytest.fixture
def lacking_a_weight(tiny_cache, tmp_path):
    """The tiny model with its lm_head left out of the checkpoint: the load initialises it at random."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "lacking-lm-head"
    shutil.copytree(tiny_cache, folder)
    weights = load_file(folder / "model.safetensors")
    del weights["lm_head.weight"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def test_a_load_that_draws_random_numbers_leaves_the_adapter_where_a_fresh_load_does(lacking_a_weight, allowed,
                                                                                      tmp_path):
    spec = load_spec("good", **{"model.id": str(lacking_a_weight)})
    fresh = train(spec, output_dir=tmp_path / "fresh", max_steps=2, log=lambda line: None, checkpoints=False)
    _mini_run(spec)
    lines: list[str] = []
    kept = train(spec, output_dir=tmp_path / "kept", max_steps=2, log=lines.append, checkpoints=False)
    assert fresh.ok and kept.ok and KEPT_BASE in lines
    assert [s.loss for s in kept.steps] == [s.loss for s in fresh.steps] and kept.val_loss == fresh.val_loss
