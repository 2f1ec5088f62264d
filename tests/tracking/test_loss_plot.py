"""A candidate's loss curve: loss and gradient norm per step side by side, each run in one colour."""
from __future__ import annotations

from tests.support.svg import Drawn
from tunegate.charts.svg import CYCLE
from tunegate.tracking.loss_plot import loss_curve_svg
from tunegate.tracking.record import StepMetrics

MINI = [StepMetrics(step=i, loss=7 - i * 0.1, grad_norm=1 + i * 0.05) for i in range(1, 5)]
TRAIN = [StepMetrics(step=i, loss=6.9 - i * 0.05, grad_norm=None) for i in range(1, 13)]


def test_loss_and_gradient_norm_are_two_panels_a_run_keeping_its_colour():
    drawn = Drawn(loss_curve_svg({"mini-run": MINI, "training": TRAIN}, "candidate"))
    # loss: both runs; gradient norm: only the mini-run logged one, still in its own colour
    assert [p.get("stroke") for p in drawn.marks("polyline")] == [CYCLE[0], CYCLE[1], CYCLE[0]]
    assert {"loss", "gradient norm", "candidate"} <= set(drawn.texts())


def test_runs_without_steps_draw_nothing():
    assert loss_curve_svg({"mini-run": [], "training": []}, "candidate") is None
