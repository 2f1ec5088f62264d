"""A sweep's validation loss per candidate: one point each, the best green, a rejected one a named slot."""
from __future__ import annotations

import re

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


def test_a_sweep_of_hundreds_of_candidates_stays_one_readable_chart():
    bars = [CandidateBar(f"nomad-{i:03d}", 6.7 - (i % 37) / 1000, True) for i in range(300)]
    drawn = Drawn(val_loss_svg(bars, "nomad"))
    texts = drawn.texts()
    assert drawn.root.get("width") == "2400" and len(drawn.marks("circle")) == 300
    names = [t for t in texts if t.startswith("nomad-")]
    assert 20 < len(names) < 300 and "nomad-036" in names  # every k-th name, and the best's (loss 6.664)
    assert [t for t in texts if re.fullmatch(r"\d\.\d{4}", t)] == ["6.6640"]  # only the best's value
