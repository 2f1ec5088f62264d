"""Shared helpers for the mini-run tests: the tiny model built once per session, and a stage runner."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import DATA as TEST_DATA
from tunegate.report import StageResult
from tunegate.spec.check import read_spec
from tunegate.stage import GateContext

DATA = TEST_DATA / "minirun"


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TUNEGATE_CACHE pointed at a session folder holding the built tiny model; returns the model folder."""
    from tunegate.training.tiny_model import ensure_tiny_model

    root = tmp_path_factory.getbasetemp() / "tunegate-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TUNEGATE_CACHE", str(root))
        yield ensure_tiny_model()


def load_spec(name: str, **overrides: Any) -> Any:
    """A committed spec from tests/data/minirun, with dotted-key overrides ('training.precision': 'fp32')."""
    result, spec = read_spec(DATA / f"{name}.yaml")
    assert spec is not None, result.findings
    for dotted, value in overrides.items():
        section, key = dotted.rsplit(".", 1)
        spec = _set(spec, section.split("."), key, value)
    return spec


def _set(model: Any, path: list[str], key: str, value: Any) -> Any:
    if not path:
        return model.model_copy(update={key: value})
    child = getattr(model, path[0])
    return model.model_copy(update={path[0]: _set(child, path[1:], key, value)})


def run_stage(spec: Any) -> tuple[StageResult, GateContext]:
    """Run the mini-run stage alone on a spec; returns the result and the context (for its facts)."""
    from tunegate.minirun.stage import run_stage as minirun_stage

    ctx = GateContext(None, spec, {"train": spec.data.train, "validation": spec.data.validation}, cap=20,
                      mini_run=True)
    return minirun_stage(ctx), ctx


def codes(result: StageResult) -> set[str]:
    return {f.code for f in result.findings}


def finding(result: StageResult, code: str) -> Any:
    return next(f for f in result.findings if f.code == code)


def random_model_with_tiny_tokenizer(tiny_cache: Path, folder: Path, model_class: Any, config_class: Any,
                                     **shape: Any) -> Path:
    """A seeded random model of `model_class` with the tiny tokenizer saved beside it, for mini-runs on
    architectures the tiny Llama does not have (learned positions, positions from the mask)."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_cache)
    config = config_class(vocab_size=-(-len(tokenizer) // 64) * 64, pad_token_id=tokenizer.pad_token_id,
                          bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model_class(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
