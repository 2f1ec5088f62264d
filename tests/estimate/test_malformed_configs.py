"""A config.json with a key of the wrong type is a TG405 finding naming the key, never a crash."""
from __future__ import annotations

import pytest

from tests.support.estimate_specs import context, make_spec
from tests.support.paths import DATA
from tunegate.estimate.stage import run_stage

BROKEN = DATA / "estimate" / "broken-types"


@pytest.mark.parametrize("folder, key", [("deepseek-v2-lite-shared-experts-list", "n_shared_experts"),
                                         ("gemma-3-text-config-null", "text_config"),
                                         ("llama-kv-heads-list", "num_key_value_heads")])
def test_a_wrongly_typed_key_is_reported_by_name(folder, key):
    stage = run_stage(context(make_spec(model={"id": str(BROKEN / folder)})))
    finding = next(f for f in stage.findings if f.code == "TG405")
    assert finding.severity == "error" and f"'{key}'" in finding.message
    assert stage.status == "failed"


def test_a_file_too_big_to_be_a_config_is_reported_not_read(tmp_path):
    # A model's config.json is a few KB; a multi-MB `.json` named as model.id is something else
    # (a tokenizer.json, a dataset) and is refused by size, as the spec stage's lookup refuses it.
    big = tmp_path / "tokenizer.json"
    big.write_text('{"vocab": "' + "x" * (2 << 20) + '"}')
    stage = run_stage(context(make_spec(model={"id": str(big)})))
    finding = next(f for f in stage.findings if f.code == "TG405")
    assert "bytes is not a model config.json" in finding.message
    assert stage.status == "failed"


def test_a_folder_beside_the_spec_is_found_before_one_of_the_same_name_here(tmp_path, monkeypatch):
    # The spec stage and the estimate read model.id through one lookup: beside the spec first.
    beside, here = tmp_path / "specs", tmp_path / "cwd"
    for folder, broken in ((beside / "model", False), (here / "model", True)):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("[]" if broken else (BROKEN.parent / "configs" / "llama-3.1-8b"
                                                                 / "config.json").read_text())
    monkeypatch.chdir(here)
    ctx = context(make_spec(model={"id": "model"}))
    ctx.spec_path = beside / "spec.yaml"
    stage = run_stage(ctx)
    assert not any(f.code in ("TG404", "TG405") for f in stage.findings)
