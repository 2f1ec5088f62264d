"""The spec stage checks a sweep's candidates as the candidates' own spec stage would, at their keys.

The specs are in tests/data/sweep/ (one kind of mistake each); the spec stage reads no data.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.paths import DATA, EXAMPLES
from tunegate.errors import UsageError
from tunegate.spec.check import parse_spec
from tunegate.sweep.candidates import apply_overrides, propose, write_candidate_spec
from tunegate.sweep.plan import check_sweep_plan

SWEEPS = DATA / "sweep"


def _found(name: str):
    parsed = parse_spec(SWEEPS / name)
    return parsed, {(f.code, f.key): f for f in parsed.result.findings}


def test_a_misspelt_grid_key_is_an_error_at_each_value_with_the_dotted_name_to_use():
    parsed, found = _found("typo_grid.yaml")
    assert parsed.spec is None
    typo = found[("TG170", "sweep.grid.training.learnin_rate.0")]
    assert (typo.severity, typo.line) == ("error", 10)
    assert "unknown key 'training.learnin_rate'" in typo.message
    assert typo.hint.startswith("Did you mean 'training.learning_rate'?")


def test_a_misspelt_sweep_spec_is_refused_before_the_sweep_starts():
    with pytest.raises(UsageError, match="TG170"):
        check_sweep_plan(parse_spec(SWEEPS / "typo_grid.yaml"), None)


def test_values_a_candidates_spec_stage_refuses_are_warnings_at_their_keys():
    parsed, found = _found("refused_values.yaml")
    assert parsed.spec is not None  # the sweep still runs: those candidates are rejected, with their reason
    warned = {key: f for (code, key), f in found.items() if code == "TG176"}
    assert set(warned) == {"sweep.candidates.1.lora.r", "sweep.candidates.2.training.learning_rate",
                           "sweep.candidates.3.hardware.gpu", "sweep.candidates.4.data.validation"}
    assert "(TG103)" in warned["sweep.candidates.1.lora.r"].message
    assert "quotes" in warned["sweep.candidates.2.training.learning_rate"].hint
    assert "(TG110)" in warned["sweep.candidates.3.hardware.gpu"].message  # bf16 on a V100
    assert "TG391" in warned["sweep.candidates.4.data.validation"].message
    assert warned["sweep.candidates.1.lora.r"].line == 10


def test_a_candidate_cannot_change_the_sweeps_own_settings_or_where_it_logs():
    parsed, found = _found("fixed_sections.yaml")
    assert parsed.spec is None
    assert {k for c, k in found if c == "TG171"} == {"sweep.candidates.0.sweep.train_steps",
                                                    "sweep.candidates.1.tracking.experiment"}


def test_an_empty_grid_axis_is_an_error_at_that_axis_and_a_repeated_value_a_warning():
    parsed, found = _found("empty_axis.yaml")
    assert parsed.spec is None
    assert found[("TG172", "sweep.grid.training.optimizer")].line == 10
    assert found[("TG174", "sweep.grid.lora.r.3")].severity == "warning"


def test_a_grid_larger_than_max_evals_says_how_many_are_left_out():
    parsed, found = _found("grid_over_budget.yaml")
    assert parsed.spec is not None
    over = found[("TG173", "sweep")]
    assert "lists 12 candidates but sweep.max_evals is 10" in over.message and "max_evals: 12" in over.hint
    assert len(propose(parsed.spec)) == 10


def test_a_common_list_sweep_passes_and_its_repeated_candidate_is_proposed_once():
    parsed, found = _found("good_list.yaml")
    assert parsed.spec is not None
    assert [(c, k) for (c, k), f in found.items() if f.severity != "info"] == [("TG174", "sweep.candidates.5")]
    assert len(propose(parsed.spec)) == 7


@pytest.mark.parametrize("name", ["sweep.yaml", "quickstart.yaml"])
def test_the_shipped_examples_have_no_sweep_finding(name):
    found = parse_spec(EXAMPLES / name).result.findings
    assert [f.code for f in found if f.code in {f"TG{n}" for n in range(170, 177)}] == []


def test_a_nested_mapping_override_keeps_the_sections_other_keys():
    data = {"lora": {"r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]}}
    assert apply_overrides(data, {"lora": {"r": 64}}) == {
        "lora": {"r": 64, "alpha": 16, "target_modules": ["q_proj", "v_proj"]}}


def test_a_candidate_spec_is_one_spec_without_the_sweep_section(tmp_path):
    (tmp_path / "s.yaml").write_text((SWEEPS / "good_list.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    written = write_candidate_spec(parse_spec(tmp_path / "s.yaml"), {"lora.r": 32, "lora.alpha": 64})
    data = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert "sweep" not in data and data["lora"] == {"r": 32, "alpha": 64, "dropout": 0.05}
    assert parse_spec(written).result.status == "passed"


@pytest.mark.parametrize("name, key, words", [
    ("nomad_rank12.yaml", "sweep.space.lora_rank_exp", "not a whole number"),
    ("nomad_empty.yaml", "sweep.space", "no variable"),
])
def test_a_nomad_space_that_cannot_start_from_the_spec_is_an_error_at_its_key(name, key, words):
    parsed, found = _found(name)
    assert parsed.spec is None and words in found[("TG175", key)].message


def test_space_bounds_written_as_text_or_booleans_are_wrong_types():
    parsed, found = _found("nomad_quoted.yaml")
    assert parsed.spec is None
    assert {("TG102", "sweep.space.log10_learning_rate.lower"), ("TG102", "sweep.space.lora_rank_exp.lower")} <= set(found)


def test_a_typo_under_a_space_variable_lists_the_keys_it_allows(tmp_path):
    spec = (SWEEPS / "nomad_empty.yaml").read_text(encoding="utf-8").replace(
        "space: {}", "space: {lora_rank_exp: {lower: 2, upper: 6, step: 1}}")
    (tmp_path / "s.yaml").write_text(spec, encoding="utf-8")
    typo = {f.key: f for f in parse_spec(tmp_path / "s.yaml").result.findings}["sweep.space.lora_rank_exp.step"]
    assert typo.hint.endswith("lora_rank_exp: lower, start, upper.")


def test_a_grid_under_the_default_list_strategy_is_pointed_out():
    with pytest.raises(UsageError, match="set sweep.strategy: grid"):
        check_sweep_plan(parse_spec(SWEEPS / "grid_without_strategy.yaml"), None)


def test_pruning_that_can_never_stop_a_candidate_is_a_warning_at_eval_every():
    parsed, found = _found("prune_never_stops.yaml")
    assert parsed.spec is not None
    never = found[("TG178", "sweep.eval_every")]
    assert (never.severity, never.line) == ("warning", 11)
    assert "eval_every 20 is not below sweep.train_steps 20" in never.message and "eval_every below" in never.hint


def test_a_task_runner_deployment_candidates_leave_unused_is_a_warning():
    _, found = _found("prune_never_stops.yaml")
    unused = found[("TG179", "sweep.task_runner")]
    assert unused.severity == "warning" and "sweep-candidate/sweep-candidate" in unused.message


def test_pruning_defaults_to_none_and_a_quarter_of_the_budget_between_evaluations_when_set():
    from tunegate.spec.model import SweepSpec
    from tunegate.sweep.budget import eval_interval

    assert SweepSpec().prune == "none" and eval_interval(SweepSpec()) is None
    assert eval_interval(SweepSpec(prune="median", train_steps=18)) == 5
    assert eval_interval(SweepSpec(prune="asha", train_steps=18, eval_every=3)) == 3


def test_a_sweeps_candidates_share_a_token_folder_of_its_own_beside_their_files(tmp_path):
    from tunegate.spec.check import load_spec
    from tunegate.sweep.budget import sweep_budget, tokens_removed

    spec, spec_path = load_spec(EXAMPLES / "sweep.yaml"), tmp_path / "sweep.yaml"
    one, other = (sweep_budget(spec, spec_path, run) for run in ("run-a", "run-b"))
    assert one.token_cache != other.token_cache
    assert Path(one.token_cache).parent == tmp_path / ".tunegate" / "candidates"
    elsewhere = spec.model_copy(update={"sweep": spec.sweep.model_copy(update={"candidates_on": "deployment"})})
    assert sweep_budget(elsewhere, spec_path, "r").token_cache is None  # a candidate elsewhere shares no folder
    Path(one.token_cache).mkdir(parents=True)
    with pytest.raises(RuntimeError), tokens_removed(one.token_cache):
        raise RuntimeError("a candidate's crash")
    assert not Path(one.token_cache).exists()


def test_a_token_folder_a_killed_sweep_left_goes_with_the_next_sweeps_own(tmp_path):
    import os

    from tunegate.spec.check import load_spec
    from tunegate.sweep.budget import STALE_TOKENS_S, sweep_budget, tokens_removed

    spec, spec_path = load_spec(EXAMPLES / "sweep.yaml"), tmp_path / "sweep.yaml"
    killed, running, now = (Path(sweep_budget(spec, spec_path, run).token_cache)
                            for run in ("killed", "running", "now"))
    for folder in (killed, running, now):
        folder.mkdir(parents=True)
    day_ago = os.stat(killed).st_mtime - STALE_TOKENS_S - 60
    os.utime(killed, (day_ago, day_ago))
    with tokens_removed(str(now)):
        pass
    assert not killed.exists() and not now.exists()
    assert running.exists()  # touched lately: another sweep of this spec may still read it
