"""Property: whatever bytes a spec or config holds, whatever number sits under any key and whatever a
data file is called, the spec stage answers with findings or a usage error.

A small hypothesis budget for CI; benchmarks/fuzz_parsers.py runs 100,000 inputs per reader.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import (CONFIG_SEEDS, SPEC_SEEDS, config_input, number_input, numeric_keys, path_input,
                                spec_input)
from tests.support.hostile import NUMBERS, PATHS
from tests.support.mutate import YAML_HAZARDS, mutate
from tunegate.spec.importers.registry import DIALECTS


def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        spec_input(data, Path(folder))


@fuzz(200)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(data):
    run(data)


@fuzz(300)
@given(st.sampled_from(SPEC_SEEDS), st.randoms(use_true_random=False))
def test_mutated_specs_never_raise(seed, rng):
    run(mutate(rng, seed, YAML_HAZARDS))


@fuzz(150)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=30))
def test_any_yaml_value_never_raises(value):
    import yaml

    run(yaml.safe_dump({"data": {"train": "t.jsonl", "validation": "v.jsonl"}, "extra": value}).encode())


YAML_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=3),
                           max_leaves=8)


@fuzz(400)
@given(st.sampled_from(CONFIG_SEEDS), st.data())
def test_any_value_under_any_key_of_an_axolotl_or_trl_config_never_raises(seed, data):
    import yaml

    config = yaml.safe_load(seed)
    key = data.draw(st.sampled_from(sorted(config, key=str)))
    config[key] = data.draw(YAML_VALUES)
    if isinstance(config[key], list) and config[key] and isinstance(config[key][0], dict):
        config[key][0][data.draw(st.sampled_from(["path", "type", "split", "data_files", "field_messages",
                                                  "message_property_mappings", "roles_to_train"]))] = \
            data.draw(YAML_VALUES)
    run(yaml.safe_dump(config, sort_keys=False).encode())


# Numbers: every numeric key of the spec (read from the model) under huge, tiny, subnormal and
# negative values, the seed corpus of issue 36 first (tests/support/hostile.py).
HOSTILE_NUMBERS = st.one_of(st.sampled_from([v for _, v in NUMBERS]), st.integers(),
                            st.integers(min_value=10 ** 18, max_value=10 ** 4000), st.floats(),
                            st.sampled_from([5e-324, 1e-320, -1e-310, 1e308, 2 ** 63, -(2 ** 63), 0, -1]))


@fuzz(80)
@given(st.dictionaries(st.sampled_from(numeric_keys()), HOSTILE_NUMBERS, min_size=1, max_size=3))
def test_any_numbers_under_any_keys_are_findings(values):
    with tempfile.TemporaryDirectory() as folder:
        number_input(values, Path(folder))


@fuzz(150)
@given(st.sampled_from(CONFIG_SEEDS), st.randoms(use_true_random=False), st.sampled_from([None, *DIALECTS]))
def test_mutated_configs_in_any_dialect_never_raise(seed, rng, kind):
    with tempfile.TemporaryDirectory() as folder:
        config_input(mutate(rng, seed, YAML_HAZARDS), Path(folder), kind)


NAMES = st.one_of(st.sampled_from(PATHS), st.text(max_size=40),
                  st.binary(min_size=1, max_size=40).map(lambda b: os.fsdecode(b.replace(b"/", b"_"))))


@fuzz(100)
@given(NAMES)
def test_a_data_file_of_any_name_is_a_finding(name):
    with tempfile.TemporaryDirectory() as folder:
        path_input(name, Path(folder))


@fuzz(100)
@given(st.sampled_from(CONFIG_SEEDS), NAMES, st.sampled_from(PATHS + ["train", "test", "/abs/*", "**", "[", ""]))
def test_any_dataset_path_and_split_in_a_config_is_a_finding(seed, name, split):
    import yaml

    config = yaml.safe_load(seed)
    if "datasets" in config or "dataset_name" not in config:
        config["datasets"] = [{"path": name, "type": "chat_template", "split": split}]
    else:
        config["dataset_name"], config["dataset_test_split"] = name, split
    try:
        data = yaml.safe_dump(config, allow_unicode=True).encode("utf-8", "surrogateescape")
    except (UnicodeEncodeError, yaml.YAMLError):  # a lone surrogate YAML cannot write
        return
    with tempfile.TemporaryDirectory() as folder:
        config_input(data, Path(folder))
