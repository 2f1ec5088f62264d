"""A chart is drawn once per process for the same numbers: a preflight shows its report's charts twice."""
from __future__ import annotations

from tunegate.charts.drawn_once import drawn_once
from tunegate.charts.tokens import tokens_svg
from tunegate.training.token_audit import length_histogram


def _audit(lengths: list[int], max_seq_len: int = 64) -> dict:
    lengths = sorted(lengths)
    return {"audited": len(lengths), "max_seq_len": max_seq_len,
            "over_max_seq_len": sum(n > max_seq_len for n in lengths), "length_histogram": length_histogram(lengths, max_seq_len)}


def test_the_same_audit_gets_the_bytes_a_fresh_drawing_gives_drawn_once():
    drawn = []

    def counted(audit, title):
        drawn.append(title)
        return tokens_svg(audit, title)

    audit = _audit([10, 20, 30, 70, 90])
    first = drawn_once(counted, audit, "train split")
    again = drawn_once(counted, dict(audit), "train split")
    assert drawn == ["train split"]
    assert first == again == tokens_svg(audit, "train split")


def test_other_numbers_draw_their_own_chart():
    drawn = []

    def counted(audit, title):
        drawn.append(audit["audited"])
        return tokens_svg(audit, title)

    base, own = drawn_once(counted, _audit([10, 20, 30]), "t"), drawn_once(counted, _audit([10, 20, 30, 99]), "t")
    assert drawn == [3, 4] and base != own
