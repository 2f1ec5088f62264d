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
