"""Token lengths as a histogram against max_seq_len: the truncated bins red, the share in the title."""
from __future__ import annotations

from tests.support.svg import Drawn
from tunegate.charts.tokens import FITS, TRUNCATED, tokens_svg
from tunegate.training.token_audit import length_histogram


def _audit(lengths: list[int], limit: int) -> dict:
    return {"audited": len(lengths), "max_seq_len": limit, "over_max_seq_len": sum(n > limit for n in lengths),
            "length_histogram": length_histogram(sorted(lengths), limit)}


def test_bins_from_max_seq_len_on_are_red_and_the_title_gives_the_truncated_share():
    audit = _audit([10, 20, 30, 40, 50, 60, 70, 90, 120, 150], 64)
    drawn = Drawn(tokens_svg(audit, "train split"))
    edges, counts = audit["length_histogram"]["edges"], audit["length_histogram"]["counts"]
    expected = [TRUNCATED if a >= 64 else FITS for a, n in zip(edges, counts) if n]
    assert [f for f in drawn.fills("rect") if f in (FITS, TRUNCATED)] == expected
    assert "train split: 4 of 10 records (40.0%) longer than max_seq_len, truncated" in drawn.texts()
    assert "max_seq_len 64 " in drawn.texts()


def test_an_audit_without_its_histogram_draws_nothing():
    assert tokens_svg({"audited": 3, "max_seq_len": 64}, "t") is None
