"""The Trainer callback: reports each evaluation, stops the training when the rule says, and never
lets a board it cannot use stop, reject or crash a candidate."""
from __future__ import annotations

from transformers import TrainerControl, TrainerState

from tunegate.pruning import PruneBoard, PrunePlan
from tunegate.pruning.callback import PruningCallback


def _evaluated(pruner: PruningCallback, step: int, loss: float) -> TrainerControl:
    state, control = TrainerState(global_step=step), TrainerControl()
    return pruner.on_evaluate(None, state, control, metrics={"eval_loss": loss})


def test_a_loss_worse_than_the_completed_median_stops_the_training(tmp_path):
    plan = PrunePlan(rule="median", board=str(tmp_path / "b.sqlite"), sweep="s", eval_every=2, train_steps=8,
                     startup=1)
    done = PruneBoard(plan.board, "s")
    done.report("other", 2, 1.0)
    done.end("other", "completed", 8)
    lines: list[str] = []
    pruner = PruningCallback(plan.for_candidate("me"), lines.append)
    pruner.on_train_begin(None, TrainerState(), TrainerControl())
    assert _evaluated(pruner, 2, 3.0).should_training_stop
    assert pruner.decision is not None and lines == [pruner.decision.reason]
    pruner.finish("pruned", 2)
    assert done.own("me") == {2: 3.0}


def test_a_board_that_cannot_be_written_turns_pruning_off_and_training_goes_on(tmp_path):
    (tmp_path / "not-a-folder").write_text("a file where the board's folder should be")
    plan = PrunePlan(rule="median", board=str(tmp_path / "not-a-folder" / "b.sqlite"), sweep="s", eval_every=2,
                     train_steps=8, startup=1).for_candidate("me")
    lines: list[str] = []
    pruner = PruningCallback(plan, lines.append)
    pruner.on_train_begin(None, TrainerState(), TrainerControl())
    assert not _evaluated(pruner, 2, 3.0).should_training_stop
    pruner.finish("completed", 8)
    assert pruner.decision is None and len(lines) == 1  # said once, in the candidate's training log
    assert lines[0].startswith("pruning is off for this candidate: its board") and "not-a-folder" in lines[0]


def test_a_non_finite_loss_is_left_to_the_health_check(tmp_path):
    plan = PrunePlan(rule="asha", board=str(tmp_path / "b.sqlite"), sweep="s", eval_every=2, train_steps=8)
    pruner = PruningCallback(plan.for_candidate("me"), print)
    assert not _evaluated(pruner, 2, float("nan")).should_training_stop
    assert PruneBoard(plan.board, "s").own("me") == {}
