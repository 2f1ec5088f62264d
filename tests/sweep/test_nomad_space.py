"""sweep.space: every input NOMAD would die on is a clean error; points map to overrides and back."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from tests.support.paths import DATA as TEST_DATA
from tunegate.errors import SpaceError
from tunegate.spec.check import read_spec
from tunegate.spec.model import Spec
from tunegate.spec.nomad_points import point_from_overrides, start_from, to_overrides
from tunegate.spec.search_space import DropoutRange, NomadSpace
from tunegate.sweep.nomad_search import nomad_problem

DATA = TEST_DATA / "nomad"

FULL = {"log10_learning_rate": {"lower": -5, "upper": -3, "start": -4},
        "lora_rank_exp": {"lower": 2, "upper": 6, "start": 4},
        "alpha_multiple": {"lower": 0.5, "upper": 4, "start": 2},
        "dropout": {"lower": 0, "upper": 0.3, "start": 0.05},
        "micro_batch_size": {"lower": 1, "upper": 8, "start": 4}}


def _space(**changes) -> dict:
    return {**FULL, **changes}


@pytest.mark.parametrize("variable, bad, words", [
    ("log10_learning_rate", {"lower": -5, "upper": -3, "start": -2}, "outside"),
    ("lora_rank_exp", {"lower": 2, "upper": 6, "start": 3.5}, "valid integer"),
    ("lora_rank_exp", {"lower": 2.5, "upper": 6, "start": 3}, "valid integer"),
    ("alpha_multiple", {"lower": 4, "upper": 1, "start": 2}, "must be below"),
    ("micro_batch_size", {"lower": 2, "upper": 2, "start": 2}, "must be below"),
    ("dropout", {"lower": 0, "upper": float("nan"), "start": 0.1}, "finite"),
    ("log10_learning_rate", {"lower": -5, "upper": float("inf"), "start": -4}, "finite"),
    ("dropout", {"lower": 0, "upper": 1.0, "start": 0.1}, "domain"),
    ("lora_rank_exp", {"lower": -1, "upper": 4, "start": 2}, "domain"),
    ("dropout", {"lower": 0, "upper": 0.3, "start": 0.1, "step": 0.1}, "Extra inputs"),
])
def test_a_space_nomad_would_crash_on_is_a_validation_error(variable, bad, words):
    with pytest.raises(ValidationError, match=words):
        NomadSpace.model_validate(_space(**{variable: bad}))


def test_the_same_errors_reach_run_nomad_as_space_errors_before_nomad_starts():
    with pytest.raises(SpaceError, match="outside"):
        nomad_problem(_space(dropout={"lower": 0, "upper": 0.3, "start": 0.5}), max_evals=5, seed=0)


def test_a_space_built_without_validation_is_still_checked_before_nomad():
    # model_construct skips pydantic: the last guard before NOMAD must still refuse it.
    bad = NomadSpace.model_construct(dropout=DropoutRange.model_construct(lower=0.0, upper=0.3, start=0.9))
    with pytest.raises(SpaceError, match="start within"):
        nomad_problem(bad, max_evals=5, seed=0)


@pytest.mark.parametrize("setting", [{"max_evals": 0}, {"seed": -1}, {"max_block_size": 0},
                                     {"max_evals": 2.5}, {"seed": True}])
def test_budget_seed_and_block_size_must_be_whole_numbers_in_range(setting):
    args = {"max_evals": 5, "seed": 0, "max_block_size": 1, **setting}
    with pytest.raises(SpaceError, match=next(iter(setting))):
        nomad_problem(FULL, **args)


def test_an_empty_space_cannot_be_searched():
    with pytest.raises(SpaceError, match="no variable"):
        nomad_problem({}, max_evals=5, seed=0)


def test_alpha_multiple_needs_the_rank_it_multiplies():
    with pytest.raises(ValidationError, match="needs lora_rank_exp"):
        NomadSpace.model_validate({"alpha_multiple": FULL["alpha_multiple"]})


def test_a_bad_space_in_a_spec_file_is_a_finding_per_variable_with_its_line():
    result, spec = read_spec(DATA / "bad_space.yaml")
    assert spec is None
    by_key = {f.key: f for f in result.findings}
    assert {k.split(".")[2] for k in by_key} == {"log10_learning_rate", "lora_rank_exp", "alpha_multiple",
                                                 "dropout", "micro_batch_size"}
    assert by_key["sweep.space.log10_learning_rate"].line == 8
    assert "outside [-5.0, -3.0]" in by_key["sweep.space.log10_learning_rate"].message
    assert by_key["sweep.space.dropout.upper"].code == "TG107"


def test_nomad_parameters_name_every_variable_type_in_order():
    problem = nomad_problem(FULL, max_evals=7, seed=3, max_block_size=4)["worker"]
    assert problem["x0"] == [-4.0, 4, 2.0, 0.05, 4]
    assert "BB_INPUT_TYPE ( R I R R I )" in problem["params"]
    assert {"MAX_BB_EVAL 7", "SEED 3", "BB_MAX_BLOCK_SIZE 4", "BB_OUTPUT_TYPE OBJ EB EB"} <= set(problem["params"])


def test_a_point_maps_to_dotted_key_overrides():
    space = NomadSpace.model_validate(FULL)
    assert to_overrides(space, [-4.0, 4.0, 2.0, 0.05, 4.0]) == {
        "training.learning_rate": 1e-4, "lora.r": 16, "lora.alpha": 32.0, "lora.dropout": 0.05,
        "training.micro_batch_size": 4}


def test_overrides_are_rounded_to_readable_values_and_kept_inside_the_bounds():
    space = NomadSpace.model_validate(FULL)
    over = to_overrides(space, [-3.69897000433, 3.0, 1.5, -1e-17, 2.0])
    assert over["training.learning_rate"] == 2e-4
    assert over["lora.alpha"] == 12.0
    assert over["lora.dropout"] == 0.0 and math.copysign(1, over["lora.dropout"]) == 1


def test_overrides_map_back_to_the_point():
    space = NomadSpace.model_validate(FULL)
    point = [-3.5, 5.0, 0.75, 0.2, 3.0]
    back = point_from_overrides(space, to_overrides(space, point))
    assert back == pytest.approx(point, rel=1e-5)


def test_missing_start_values_come_from_the_spec():
    spec = Spec.model_validate({"data": {"train": "t.jsonl", "validation": "v.jsonl"},
                                "lora": {"r": 8, "alpha": 16, "dropout": 0.1},
                                "training": {"learning_rate": 1e-4}})
    space = NomadSpace.model_validate({"log10_learning_rate": {"lower": -5, "upper": -3},
                                       "lora_rank_exp": {"lower": 2, "upper": 6},
                                       "alpha_multiple": {"lower": 1, "upper": 4},
                                       "dropout": {"lower": 0, "upper": 0.3, "start": 0.0}})
    assert start_from(space, spec).start() == [-4.0, 3, 2.0, 0.0]


def test_a_spec_rank_that_is_not_a_power_of_two_cannot_be_the_start():
    spec = Spec.model_validate({"data": {"train": "t.jsonl", "validation": "v.jsonl"}, "lora": {"r": 12}})
    space = NomadSpace.model_validate({"lora_rank_exp": {"lower": 2, "upper": 6}})
    with pytest.raises(SpaceError, match="power of two"):
        start_from(space, spec)


def test_a_spec_value_outside_the_bounds_cannot_be_the_start():
    spec = Spec.model_validate({"data": {"train": "t.jsonl", "validation": "v.jsonl"},
                                "training": {"learning_rate": 0.01}})
    space = NomadSpace.model_validate({"log10_learning_rate": {"lower": -5, "upper": -3}})
    with pytest.raises(SpaceError, match="outside"):
        start_from(space, spec)


def test_a_space_without_start_values_asks_for_them():
    space = NomadSpace.model_validate({"dropout": {"lower": 0, "upper": 0.3}})
    with pytest.raises(SpaceError, match="no start for dropout"):
        space.start()
