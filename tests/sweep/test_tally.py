"""A sweep shows candidates done of the planned total, and the last verdict, while it runs."""
from __future__ import annotations

import io
import time

from tunegate import progress
from tunegate.progress.draw import LinePainter, visible
from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.tally import CandidateTally, last_verdict

REJECTED = CandidateOutcome(overrides={"training.learning_rate": 10000.0}, spec_path="c1.yaml", approved=False,
                            reason="rejected at stage 'mini-run'", codes=["TG512"])
APPROVED = CandidateOutcome(overrides={"lora.r": 8}, spec_path="c2.yaml", approved=True, val_loss=6.61234)


def test_the_last_verdict_names_the_candidate_and_its_code_or_its_validation_loss():
    assert last_verdict(REJECTED) == 'rejected {"training.learning_rate":10000.0} (TG512)'
    assert last_verdict(APPROVED) == 'approved {"lora.r":8} val 6.6123'


def test_the_board_counts_candidates_against_the_plan_and_shows_the_last_verdict(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # lines are cut to the terminal's width
    screen = io.StringIO()
    progress.enable(screen, delay_s=0, painter=LinePainter(screen))
    try:
        with CandidateTally(total=10) as tally:
            tally.plan(3)
            tally.record(REJECTED)
            tally.record(APPROVED)
            assert (tally.step.done, tally.step.total) == (2, 3)
            time.sleep(0.35)  # a few redraws
    finally:
        progress.disable()
    assert '67%  2/3 candidates  last: approved {"lora.r":8} val 6.6123' in visible(screen.getvalue())
