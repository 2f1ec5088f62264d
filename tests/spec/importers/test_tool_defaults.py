"""The tools' defaults and accepted values come from the tools: read from an installed tool's config
classes (never imported), else from copied tables that name the version they were copied from."""
from __future__ import annotations

import sys

import pytest

from tests.support.paths import DATA
from tunegate.spec.check import parse_spec
from tunegate.spec.importers import axolotl_dialect, tool_defaults, trl_dialect

AXOLOTL = DATA / "configs" / "axolotl"
# The copied tables, pinned to the versions COPIED_FROM names: a change to a default is a change of version.
PINNED = {
    "axolotl 0.18.0": {"sequence_len": 512, "micro_batch_size": 1, "gradient_accumulation_steps": 1,
                       "num_epochs": 1.0, "lora_dropout": 0.0, "weight_decay": 0.0, "warmup_steps": 0},
    "TRL 1.10.0.dev0": {"per_device_train_batch_size": 8, "num_train_epochs": 3.0, "learning_rate": 2e-5,
                        "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "gradient_checkpointing": True,
                        "gradient_accumulation_steps": 1, "seed": 42, "weight_decay": 0.0, "max_grad_norm": 1.0},
}


def _table(dialect) -> dict:
    return {key: default for key, _, default in dialect._PLAIN if default is not None}


@pytest.mark.parametrize(("tool", "dialect", "version"), [("axolotl", axolotl_dialect, "axolotl 0.18.0"),
                                                          ("trl", trl_dialect, "TRL 1.10.0.dev0")])
def test_each_copied_table_names_its_version_and_holds_that_versions_defaults(tool, dialect, version):
    assert tool_defaults.COPIED_FROM[tool].startswith(version)
    table = _table(dialect)
    assert {k: table[k] for k in PINNED[version]} == PINNED[version]


def test_trls_inherited_defaults_are_the_installed_transformers_training_arguments():
    import transformers

    read = tool_defaults.literal_defaults(tool_defaults._package_folder("transformers") / "training_args.py")
    inherited = ("per_device_train_batch_size", "num_train_epochs", "seed", "weight_decay", "max_grad_norm",
                 "gradient_accumulation_steps")
    assert {k: read[k] for k in inherited} == {k: _table(trl_dialect)[k] for k in inherited}, transformers.__version__


def test_where_the_tool_is_installed_its_config_classes_give_the_defaults(tmp_path, monkeypatch):
    package = tmp_path / "axolotl" / "utils" / "schemas"
    package.mkdir(parents=True)
    (tmp_path / "axolotl" / "__init__.py").write_text("")
    (package / "training.py").write_text(
        "from pydantic import BaseModel, Field\n\nclass HyperparametersConfig(BaseModel):\n"
        "    micro_batch_size: int | None = Field(default=4, json_schema_extra={})\n"
        "    lr_scheduler: str | None = 'linear'\n    learning_rate: str | float\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    tool_defaults.installed_defaults.cache_clear()
    try:
        assert tool_defaults.installed_defaults("axolotl") == {"micro_batch_size": 4, "lr_scheduler": "linear"}
        (tmp_path / "cfg.yml").write_text("base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\n"
                                          "lora_alpha: 16\nlearning_rate: 0.0002\n")  # sets neither key
        spec = parse_spec(tmp_path / "cfg.yml").raw
        assert (spec["training"]["micro_batch_size"], spec["training"]["lr_scheduler"]) == (4, "linear")
        assert tool_defaults.source("axolotl") == "the installed tool's config classes"
    finally:
        tool_defaults.installed_defaults.cache_clear()


def test_an_optimizer_the_tool_does_not_know_is_refused_as_the_tool_refuses_it(tmp_path):
    body = (AXOLOTL / "lora-1b.yml").read_text().replace("../data", str(DATA / "configs" / "data"))
    (tmp_path / "typo.yml").write_text(body.replace("optimizer: adamw_8bit", "optimizer: adamw_torhc"))
    (tmp_path / "torchao.yml").write_text(body.replace("optimizer: adamw_8bit", "optimizer: ao_adamw_4bit"))
    [typo] = [f for f in parse_spec(tmp_path / "typo.yml").result.findings if f.key == "optimizer"]
    assert (typo.code, typo.severity) == ("TG154", "error") and "Did you mean 'adamw_torch'" in typo.hint
    [torchao] = [f for f in parse_spec(tmp_path / "torchao.yml").result.findings if f.key == "optimizer"]
    assert (torchao.code, torchao.severity) == ("TG147", "warning")  # axolotl's own torchao optimizer
