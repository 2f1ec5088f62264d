"""The SVG kit the charts are drawn with: round ticks, data placed in its box, text that stays text."""
from __future__ import annotations

import pytest

from tests.support.svg import NS, Drawn
from tunegate.charts.svg import Canvas, padded, tick_label, ticks


@pytest.mark.parametrize(("low", "high", "options", "expected"), [
    (0.45, 12.55, {"integer": True}, [2, 4, 6, 8, 10, 12]),  # steps of a 12-step run
    (0.5, 4.5, {"integer": True}, [1, 2, 3, 4]),               # never a half step
    (6.53, 6.71, {"most": 5}, [6.55, 6.6, 6.65, 6.7]),         # losses that differ in the second decimal
    (0.0, 91.0, {}, [0, 20, 40, 60, 80]),                     # GiB up to a GPU's 80 and the margin
    (5.0, 5.0, {}, [5.0]),
])
def test_ticks_are_round_values_within_the_range(low, high, options, expected):
    assert ticks(low, high, **options) == pytest.approx(expected)


def test_a_range_that_is_not_a_range_has_no_ticks():
    assert ticks(float("nan"), 1.0) == [] and ticks(2.0, 1.0) == []


def test_tick_labels_carry_the_decimals_their_spacing_needs():
    assert [tick_label(v, [6.55, 6.6, 6.65]) for v in (6.55, 6.6)] == ["6.55", "6.60"]
    assert tick_label(2.5, [0, 2.5, 5]) == "2.5" and tick_label(20, [0, 20, 40]) == "20"
    assert tick_label(20000, [0, 20000, 40000]) == "20,000"
    assert tick_label(2e30, [0, 2e30, 4e30]) == "2e+30"  # a diverged loss: one short label, not 31 digits
    assert tick_label(2e-6, [0, 2e-6, 4e-6]) == "2e-06"


def test_a_single_value_gets_a_range_around_it():
    assert padded([3.0]) == (2.5, 3.5) and padded([0.0, 10.0]) == (-0.5, 10.5)
    low, high = padded([6.6456, 6.6456 + 1e-13])  # equal to a float's last digits: one value
    assert len(set(ticks(low, high))) == len(ticks(low, high)) > 1


def test_the_document_is_its_size_on_white():
    drawn = Drawn(Canvas(800, 240).svg())
    assert (drawn.root.get("width"), drawn.root.get("height"), drawn.root.get("viewBox")) == ("800", "240",
                                                                                             "0 0 800 240")
    assert drawn.fills("rect") == ["#ffffff"]


def test_data_lands_in_its_box_with_y_growing_up():
    plot = Canvas(800, 300).plot((0, 10), (0, 1), (50, 30, 750, 250))
    assert (plot.px(0), plot.px(10), plot.py(0), plot.py(1)) == (50, 750, 250, 30)


def test_a_hostile_label_is_text_never_markup():
    canvas = Canvas(400, 100)
    label = 'r=8 <script>alert(1)</script> & "x" \x01\x1b[31m'
    canvas.text(10, 10, label)
    canvas.title(label)
    drawn = Drawn(canvas.svg())  # well-formed though the label held control characters
    assert not list(drawn.root.iter(f"{NS}script"))
    assert drawn.texts()[0] == 'r=8 <script>alert(1)</script> & "x" \ufffd\ufffd[31m'


def test_a_title_too_long_for_the_canvas_is_cut_with_an_ellipsis():
    canvas = Canvas(200, 100)
    canvas.title("x" * 500)
    [title] = Drawn(canvas.svg()).texts()
    assert title.endswith("\u2026") and len(title) < 40
