"""run_nomad with real PyNomad against synthetic black boxes: rejections, failures, seeds, blocks."""
from __future__ import annotations

import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tunegate.errors import NomadError
from tunegate.spec.search_space import NomadSpace
from tunegate.sweep.nomad_outcome import Outcome
from tunegate.sweep.nomad_search import _drive, _feasible_picks, _Session, nomad_problem, run_nomad

pytest.importorskip("PyNomad")

SPACE = NomadSpace.model_validate({
    "log10_learning_rate": {"lower": -6, "upper": -2, "start": -4},
    "lora_rank_exp": {"lower": 1, "upper": 6, "start": 3},
    "dropout": {"lower": 0, "upper": 0.3, "start": 0.1}})
DIVERGES_ABOVE = 1e-3


def diverging_loss(overrides: dict) -> Outcome:
    """Learning rates above 1e-3 'diverge' (rejected); elsewhere a bowl with its floor at lr 3e-4, r 16."""
    lr, r, dropout = overrides["training.learning_rate"], overrides["lora.r"], overrides["lora.dropout"]
    if lr > DIVERGES_ABOVE:
        return Outcome.rejected(f"loss is nan at learning rate {lr:g}", ["TG503"])
    loss = 1.0 + (math.log10(lr) + 3.5) ** 2 + (math.log2(r) - 4) ** 2 / 10 + dropout
    return Outcome(feasible=True, objective=loss, memory_excess_gib=-10.0)


def test_a_feasible_best_point_is_found_where_part_of_the_space_diverges():
    result = run_nomad(SPACE, diverging_loss, max_evals=30, seed=1)
    assert len(result.evaluations) == 30
    best = result.best
    assert best is not None and best.outcome.feasible
    assert best.overrides["training.learning_rate"] <= DIVERGES_ABOVE
    assert best.outcome.objective == min(e.outcome.objective for e in result.evaluations if e.outcome.feasible)
    assert best.outcome.objective < diverging_loss(result.evaluations[0].overrides).objective


def test_rejected_candidates_are_recorded_with_their_reasons():
    result = run_nomad(SPACE, diverging_loss, max_evals=30, seed=1)
    assert result.rejected, "the search must have tried a diverging learning rate"
    for e in result.rejected:
        assert e.overrides["training.learning_rate"] > DIVERGES_ABOVE
        assert e.outcome.reason.startswith("loss is nan") and e.outcome.codes == ["TG503"]
    assert [e.index for e in result.evaluations] == list(range(30))


def test_a_rejected_start_point_does_not_stop_the_search():
    # NOMAD ends at once when its start point *fails*; a rejection is an EB violation instead.
    space = SPACE.model_copy(update={"log10_learning_rate": SPACE.log10_learning_rate.model_copy(update={"start": -2.5})})
    result = run_nomad(space, diverging_loss, max_evals=20, seed=1)
    assert not result.evaluations[0].outcome.feasible
    assert len(result.evaluations) == 20
    assert result.best is not None


def test_an_exception_in_the_black_box_is_a_failed_evaluation_and_the_search_goes_on():
    def flaky(overrides: dict) -> Outcome:
        if overrides["lora.r"] == 4:
            raise RuntimeError("CUDA error: device-side assert triggered")
        return diverging_loss(overrides)

    result = run_nomad(SPACE, flaky, max_evals=25, seed=1)
    failed = [e for e in result.evaluations if e.outcome.codes == ["exception"]]
    assert failed and all(e.overrides["lora.r"] == 4 for e in failed)
    assert failed[0].outcome.reason == "the black box raised RuntimeError: CUDA error: device-side assert triggered"
    assert len(result.evaluations) == 25 and result.best is not None


def test_a_malformed_answer_from_the_black_box_is_a_failed_evaluation():
    result = run_nomad(SPACE, lambda o: {"feasible": True, "objective": float("nan")}, max_evals=3, seed=0)
    assert all(not e.outcome.feasible for e in result.evaluations)
    assert "finite objective" in result.evaluations[0].outcome.reason
    assert result.best is None and result.run_flag in (-1, -2)


def test_the_same_seed_gives_the_same_sequence_of_points():
    first = run_nomad(SPACE, diverging_loss, max_evals=20, seed=7)
    again = run_nomad(SPACE, diverging_loss, max_evals=20, seed=7)
    assert [e.point for e in first.evaluations] == [e.point for e in again.evaluations]
    assert first.best_index == again.best_index


def test_block_evaluation_hands_several_points_at_once_to_evaluate_many():
    blocks: list[int] = []
    threads: set[str] = set()

    def in_parallel(batch: list[dict]) -> list[Outcome]:
        blocks.append(len(batch))
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda o: (threads.add(threading.current_thread().name), diverging_loss(o))[1],
                                 batch))

    result = run_nomad(SPACE, diverging_loss, max_evals=24, seed=1, max_block_size=6, evaluate_many=in_parallel)
    assert max(blocks) > 1 and sum(blocks) == 24 == len(result.evaluations)
    assert len(threads) > 1
    assert [e.block for e in result.evaluations] == sorted(e.block for e in result.evaluations)
    assert result.best is not None and result.best.outcome.feasible


def test_a_block_never_takes_the_search_past_its_budget():
    seen: list[int] = []
    result = run_nomad(SPACE, diverging_loss, max_evals=9, seed=1, max_block_size=8,
                       evaluate_many=lambda batch: (seen.append(len(batch)), [diverging_loss(o) for o in batch])[1])
    assert sum(seen) == 9 == len(result.evaluations)


def test_exceptions_returned_by_evaluate_many_fail_only_their_own_points():
    def half_broken(batch: list[dict]) -> list:
        return [ValueError("worker lost") if i % 2 else diverging_loss(o) for i, o in enumerate(batch)]

    result = run_nomad(SPACE, diverging_loss, max_evals=16, seed=1, max_block_size=4, evaluate_many=half_broken)
    reasons = {e.outcome.reason for e in result.evaluations if e.outcome.codes == ["exception"]}
    assert reasons == {"the black box raised ValueError: worker lost"}
    assert result.best is not None


def test_every_evaluation_is_written_to_the_history_file_as_it_happens(tmp_path):
    path = tmp_path / "history.jsonl"
    result = run_nomad(SPACE, diverging_loss, max_evals=8, seed=2, history_path=path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["overrides"] for line in lines] == [e.overrides for e in result.evaluations]
    assert lines[0]["outcome"]["feasible"] is True


def test_a_nomad_crash_is_an_error_for_the_caller_not_its_death():
    # Bypass the Python checks on purpose: NOMAD segfaults on a start point outside the bounds.
    problem = nomad_problem(SPACE, max_evals=5, seed=0)
    problem["worker"]["x0"] = [-1.0, 3, 0.1]
    session = _Session(problem["space"], diverging_loss, None, 5, None)
    with pytest.raises(NomadError, match="Invalid Parameter|exit code") as info:
        _drive(problem["worker"], session)
    assert info.value.evaluations == []


def test_the_best_point_is_read_from_either_pynomad_result_shape():
    # Shapes as PyNomadBBO 4.5.1 and 4.6.0 return them (docs/nomad.md, "Result keys").
    v45 = {"x_best": [-3.5, 4.0, 0.0], "f_best": 1.0, "h_best": 0.0, "nb_evals": 9, "run_flag": 0}
    v45_infeasible = {"x_best": [-2.5, 4.0, 0.0], "f_best": math.inf, "h_best": math.inf, "run_flag": -2}
    v46 = {"x_single_best": [-2.5, 4.0, 0.0], "h_single_best": 4.0, "x_best_feas": [[-3.5, 4.0, 0.0]],
           "x_best_infeas": [[-2.5, 4.0, 0.0]], "run_flag": 0}
    assert _feasible_picks(v45) == [[-3.5, 4.0, 0.0]]
    assert _feasible_picks(v45_infeasible) == []
    assert _feasible_picks(v46) == [[-3.5, 4.0, 0.0]]


def test_a_single_integer_variable_does_not_crash_nomad():
    # With NOMAD 4.6.0's default directions this exact search segfaults (benchmarks/nomad_crash_probe.py).
    space = NomadSpace.model_validate({"micro_batch_size": {"lower": 1, "upper": 64, "start": 1}})
    result = run_nomad(space, lambda o: Outcome(feasible=True, objective=(o["training.micro_batch_size"] - 3) ** 2),
                       max_evals=30, seed=0)
    assert result.best_overrides == {"training.micro_batch_size": 3}
