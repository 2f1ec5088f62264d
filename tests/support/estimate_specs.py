"""Specs for the estimate and advisor tests, built from dicts over the committed tiny dataset."""
from __future__ import annotations

import copy
from typing import Any

from tests.support.paths import DATA as TEST_DATA
from tunegate.facts import GateFacts
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

DATA = TEST_DATA / "estimate"
BASE: dict[str, Any] = {
    "model": {"id": "meta-llama/Llama-3.2-1B"},
    "data": {"train": str(DATA / "train.jsonl"), "validation": str(DATA / "validation.jsonl")},
    "lora": {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]},
    "training": {"micro_batch_size": 2, "grad_accum_steps": 4, "max_seq_len": 2048, "epochs": 1},
    "hardware": {"gpu": "A100-80GB", "count": 1, "hourly_usd": 2.0},
    "estimate": {"dataset_tokens": 100_000_000},
}


def make_spec(**sections: dict[str, Any]) -> Spec:
    """BASE with the given sections' keys overridden (`None` removes a key)."""
    data = copy.deepcopy(BASE)
    for section, values in sections.items():
        target = data.setdefault(section, {})
        for key, value in values.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    return Spec.model_validate(data)


def context(spec: Spec, facts: dict[str, Any] | None = None, advisor: bool = False) -> GateContext:
    return GateContext(spec_path=None, spec=spec, files={}, cap=20, advisor=advisor,
                       facts=GateFacts.model_validate(facts or {}))
