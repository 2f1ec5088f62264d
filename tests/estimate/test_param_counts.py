"""The config-only counter agrees with transformers' own models built on the meta device.

Every config tunegate ships (tunegate/data/model_configs) and every config under
tests/data/estimate/configs is built with `AutoModelForCausalLM.from_config` on the meta device
(no weights, no download) and its parameters counted; the torch-free counter must agree within
0.5 %, and the module names LoRA targets must be the model's own.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import DATA
from tunegate.spec.checkpoint import SHIPPED
from tunegate.estimate.families import from_config
from tunegate.estimate.meta_count import count_in_subprocess, meta_count

CONFIGS = sorted(SHIPPED.glob("*.json")) + sorted((DATA / "estimate" / "configs").glob("*/config.json"))
# phi-2's first release names its model type "phi-msft", which only its remote code builds;
# transformers builds the same model from the converted config (tests/data/estimate/configs/phi-2).
BUILDABLE = [p for p in CONFIGS if json.loads(p.read_text()).get("model_type") != "phi-msft"]


def label(path: Path) -> str:
    return path.stem if path.parent == SHIPPED else path.parent.name


@pytest.mark.parametrize("path", BUILDABLE, ids=label)
def test_the_config_only_count_agrees_with_the_meta_device_model(path):
    pytest.importorskip("transformers")
    config = json.loads(path.read_text())
    ours, theirs = from_config(config), meta_count(config)
    assert abs(ours.param_count() - theirs.total_params) <= 0.005 * theirs.total_params
    assert ours.exact


@pytest.mark.parametrize("path", BUILDABLE, ids=label)
def test_lora_target_names_are_the_models_own_linear_modules(path):
    pytest.importorskip("transformers")
    config = json.loads(path.read_text())
    ours, theirs = from_config(config), meta_count(config)
    assert set(ours.linear_shapes()) <= set(theirs.linear_names)


def test_the_legacy_phi_2_config_counts_as_the_converted_one():
    legacy = json.loads((DATA / "estimate" / "configs" / "phi-2-msft" / "config.json").read_text())
    converted = json.loads((DATA / "estimate" / "configs" / "phi-2" / "config.json").read_text())
    assert from_config(legacy).param_count() == from_config(converted).param_count()


def test_the_child_process_count_is_cached_per_config(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path))
    config = json.loads((DATA / "estimate" / "configs" / "gpt2" / "config.json").read_text())
    first = count_in_subprocess(config)
    assert first is not None and first.total_params == 124_439_808
    assert len(list((tmp_path / "param-counts").glob("*.json"))) == 1
    assert count_in_subprocess(config) == first  # read back, no second child process
