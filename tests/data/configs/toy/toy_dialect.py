"""A toy config dialect: what a new importer is, copied into a package's importers/ by
tests/spec/importers/test_registry.py (with its row in registry.DIALECTS) to show that nothing
else must change for its configs to be detected, offered by --from, mapped and translated back.

    toy_base: Qwen/Qwen2.5-0.5B      # model.id
    toy_rank: 8                      # lora.r (the toy tool's default 8)
    toy_train: data/train.jsonl      # data.train
    toy_validation: data/val.jsonl   # data.validation
"""
from __future__ import annotations

from tunegate.spec.importers.config_data import map_data_file
from tunegate.spec.importers.config_map import ConfigMap, Dialect


def map_config(cmap: ConfigMap) -> None:
    """Fill `cmap` from a toy config."""
    cmap.set("model.id", cmap.get("toy_base"), "toy_base")
    cmap.set("lora.r", cmap.get("toy_rank", 8), "toy_rank")
    map_data_file(cmap, "train", cmap.get("toy_train"), "toy_train")
    map_data_file(cmap, "validation", cmap.get("toy_validation"), "toy_validation")


DIALECT = Dialect(
    name="toy", map_config=map_config, docs="docs/toy.md", runs_with="toy-train",
    markers=frozenset({"toy_base", "toy_rank", "toy_train", "toy_validation"}),
    ignores_unknown="toy-train ignores keys it does not know",
    fixes={"Set lora.r to a valid value": "Give lora.r a whole number of at least 1"},
)
