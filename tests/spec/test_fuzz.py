"""Property: whatever bytes a spec holds, the spec stage answers with findings or a usage error.

A small hypothesis budget for CI; benchmarks/fuzz_parsers.py runs 100,000 inputs (nightly tier).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import CONFIG_SEEDS, SPEC_SEEDS, spec_input
from tests.support.mutate import YAML_HAZARDS, mutate


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
