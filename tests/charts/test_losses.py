"""Training loss per step of several runs on one chart, a non-finite loss marked where it happened."""
from __future__ import annotations

from tests.support.svg import Drawn
from tunegate.charts.losses import losses_svg
from tunegate.charts.svg import CYCLE


def test_each_run_is_one_line_in_its_own_colour_with_a_legend():
    drawn = Drawn(losses_svg({"a": [(1, 6.9), (2, 6.8)], "b": [(1, 6.95), (2, 6.7)]}, "sweep"))
    assert [p.get("stroke") for p in drawn.marks("polyline")] == [CYCLE[0], CYCLE[1]]
    assert {"a", "b", "step", "training loss", "sweep"} <= set(drawn.texts())


def test_a_non_finite_loss_leaves_the_line_and_is_marked_at_its_step():
    drawn = Drawn(losses_svg({"mini-run": [(1, 6.9), (2, float("nan")), (3, 6.7)]}, "t"))
    [line] = drawn.marks("polyline")
    assert len(line.get("points").split()) == 2
    assert " mini-run: non-finite" in drawn.texts()
    assert [m.get("stroke-dasharray") for m in drawn.marks("line") if m.get("stroke") == CYCLE[0]] == ["2,3"]


def test_a_run_that_is_all_non_finite_is_drawn_in_red_without_a_line():
    drawn = Drawn(losses_svg({"diverged": [(1, float("inf"))]}, "t"))
    assert drawn.marks("polyline") == [] and " diverged: non-finite" in drawn.texts()


def test_no_points_no_chart():
    assert losses_svg({"a": []}, "t") is None


def test_a_diverging_loss_gets_short_tick_labels_and_keeps_the_plot_wide():
    # Before: the y labels spelt 8e29 out in 37 characters and took ~280 px of the chart's 800.
    drawn = Drawn(losses_svg({"diverged": [(1, 6.9), (2, 3e4), (3, 8e29)]}, "t"))
    [line] = drawn.marks("polyline")
    xs = [float(point.split(",")[0]) for point in line.get("points").split()]
    assert xs[0] < 150 and xs[-1] < 800 and "8e+29" in drawn.texts()
