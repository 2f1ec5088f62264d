"""The two pruning rules, as Optuna states them, on losses a sweep's board holds."""
from __future__ import annotations

import pytest

from tunegate.pruning import PruneBoard, PrunePlan, decide
from tunegate.pruning.rules import asha_rule, median_rule, rung


def _plan(tmp_path, rule="median", **settings) -> PrunePlan:
    fields = {"eval_every": 2, "train_steps": 8, **settings}
    return PrunePlan(rule=rule, board=str(tmp_path / "board.sqlite"), sweep="s1", **fields).for_candidate("me")


def _completed(board: PruneBoard, name: str, losses: dict[int, float]) -> None:
    for step, loss in losses.items():
        board.report(name, step, loss)
    board.end(name, "completed", max(losses))


def test_median_stops_a_candidate_whose_best_loss_is_worse_than_the_completed_median(tmp_path):
    plan = _plan(tmp_path, startup=2)
    board = PruneBoard(plan.board, plan.sweep)
    _completed(board, "a", {2: 2.0, 4: 1.8})
    _completed(board, "b", {2: 2.2, 4: 2.0})
    board.report("me", 2, 2.5)
    decision = decide(plan, board, 2, 2.5)
    assert decision.prune
    assert "2.5000" in decision.reason and "median 2.1000 of the 2 completed" in decision.reason
    assert "step 2 of 8" in decision.reason and "sweep.prune: median" in decision.reason


def test_median_keeps_a_candidate_at_or_below_the_median(tmp_path):
    plan = _plan(tmp_path, startup=2)
    board = PruneBoard(plan.board, plan.sweep)
    _completed(board, "a", {2: 2.0})
    _completed(board, "b", {2: 2.2})
    board.report("me", 2, 2.1)
    assert not decide(plan, board, 2, 2.1).prune


def test_median_compares_the_best_loss_so_far_as_optuna_does():
    plan = PrunePlan(rule="median", board="unused", sweep="s", eval_every=2, train_steps=8, startup=1)
    # worse than the median at step 4 now, but its best (step 2) is not: it goes on
    assert not median_rule(plan, {2: 1.0, 4: 3.0}, [2.0], 4).prune
    assert median_rule(plan, {2: 2.5, 4: 3.0}, [2.0], 4).prune


def test_median_waits_for_startup_completed_candidates_and_the_warmup(tmp_path):
    plan = _plan(tmp_path, startup=2, warmup_steps=4)
    assert not median_rule(plan, {2: 9.0}, [1.0, 1.0], 2).prune  # before the warm-up step
    assert not median_rule(plan, {4: 9.0}, [1.0], 4).prune  # one completed candidate of the two asked
    assert median_rule(plan, {4: 9.0}, [1.0, 1.0], 4).prune


def test_only_completed_candidates_count_for_the_median(tmp_path):
    plan = _plan(tmp_path, startup=1)
    board = PruneBoard(plan.board, plan.sweep)
    board.report("running", 2, 1.0)  # still training: its curve says nothing yet
    board.report("pruned", 2, 1.0)
    board.end("pruned", "pruned", 2)
    board.report("me", 2, 5.0)
    assert not decide(plan, board, 2, 5.0).prune


def test_no_rule_stops_a_candidate_at_its_last_step(tmp_path):
    plan = _plan(tmp_path, startup=1)
    board = PruneBoard(plan.board, plan.sweep)
    _completed(board, "a", {8: 1.0})
    board.report("me", 8, 5.0)
    assert not decide(plan, board, 8, 5.0).prune
    asha = _plan(tmp_path, "asha", eval_every=2, train_steps=6, eta=3)
    assert not decide(asha, board, 6, 5.0).prune


def test_asha_rungs_are_at_eval_every_times_powers_of_eta():
    plan = PrunePlan(rule="asha", board="unused", sweep="s", eval_every=2, train_steps=100, eta=3)
    assert [s for s in range(1, 60) if rung(plan, s) is not None] == [2, 6, 18, 54]
    assert [rung(plan, s) for s in (2, 6, 18)] == [0, 1, 2]


@pytest.mark.parametrize(("others", "loss", "pruned"), [
    ([], 9.0, False),  # the first to reach a rung always goes on
    ([1.0], 2.0, True),  # the second only if it beats the first (best 1 of 2 at eta 3)
    ([3.0], 2.0, False),
    ([1.0, 2.0, 3.0, 4.0, 5.0], 2.0, False),  # best 2 of 6 at eta 3: 1.0 and 2.0 go on
    ([1.0, 2.0, 3.0, 4.0, 5.0], 3.0, True),
])
def test_asha_keeps_the_best_one_in_eta_at_a_rung(others, loss, pruned):
    plan = PrunePlan(rule="asha", board="unused", sweep="s", eval_every=2, train_steps=100, eta=3)
    assert asha_rule(plan, loss, others, 2).prune is pruned


def test_asha_stops_nothing_between_rungs():
    plan = PrunePlan(rule="asha", board="unused", sweep="s", eval_every=2, train_steps=100, eta=3)
    assert not asha_rule(plan, 9.0, [1.0, 1.0, 1.0], 4).prune  # step 4 is no rung (2, 6, 18, ...)


def test_asha_reason_names_the_rung_the_cutoff_and_the_rule(tmp_path):
    plan = _plan(tmp_path, "asha", eval_every=2, train_steps=20, eta=2)
    board = PruneBoard(plan.board, plan.sweep)
    board.report("a", 4, 1.0)
    board.report("b", 4, 1.5)
    board.report("me", 4, 2.0)
    decision = decide(plan, board, 4, 2.0)
    assert decision.prune
    assert decision.reason.startswith("pruned at rung 1 (step 4 of 20)")
    assert "best 1 of the 3 candidate(s)" in decision.reason and "cut-off 1.0000" in decision.reason
