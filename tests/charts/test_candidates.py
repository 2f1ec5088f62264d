"""A sweep's validation loss per candidate: one point each, the best green, a rejected one a named slot."""
from __future__ import annotations

from tests.support.svg import Drawn
from tunegate.charts.candidates import BEST, OTHER, CandidateBar, val_loss_svg

BARS = [CandidateBar("lora.r=8", 6.6456, True), CandidateBar("lora.r=16", 6.6277, True),
        CandidateBar("lora.r=64", None, False), CandidateBar("lr=1e-2", float("nan"), True)]


def test_each_scored_candidate_is_one_point_and_the_lowest_loss_is_green():
    drawn = Drawn(val_loss_svg(BARS, "sweep"))
    assert drawn.fills("circle") == [OTHER, BEST]
    assert {"6.6456", "6.6277"} <= set(drawn.texts())


def test_a_rejected_and_an_unscored_candidate_keep_their_named_slot():
    texts = Drawn(val_loss_svg(BARS, "sweep")).texts()
    assert texts.count("rejected") == 1 and texts.count("no score") == 1
    assert {"lora.r=8", "lora.r=16", "lora.r=64", "lr=1e-2"} <= set(texts)


def test_more_candidates_make_a_wider_chart_and_none_makes_none():
    assert Drawn(val_loss_svg(BARS * 5, "sweep")).root.get("width") == "2400"
    assert val_loss_svg([], "sweep") is None
