"""The sweep's table and Markdown: each verdict with its warnings, a pruned candidate said as such and
never the best, even at a lower loss (its loss is from the step it was stopped at)."""
from __future__ import annotations

from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.markdown import candidate_markdown, sweep_markdown
from tunegate.sweep.summary import summarise
from tunegate.sweep.tally import last_verdict

CUT = {"TG511": 22, "TG512": 22, "TG208": 1}
KEPT = CandidateOutcome(overrides={"lora.r": 8}, spec_path="c1.yaml", approved=True, val_loss=2.1, warnings=CUT)
PRUNED = CandidateOutcome(overrides={"lora.r": 4}, spec_path="c2.yaml", approved=True, val_loss=1.9,
                          pruned_at_step=5, steps_saved=15, reason="pruned at step 5 of 20: ...")
REJECTED = CandidateOutcome(overrides={"lora.r": -1}, spec_path="c3.yaml", approved=False, reason="rejected at spec")


def test_a_pruned_candidate_is_never_the_best_and_its_saved_steps_are_counted():
    summary = summarise([KEPT, PRUNED, REJECTED], None)
    assert summary.best.overrides == {"lora.r": 8}
    assert (summary.approved, summary.pruned, summary.steps_saved) == (2, 1, 15)


def test_the_table_shows_each_verdict_with_its_warnings_truncation_first():
    lines = summarise([KEPT, PRUNED, REJECTED], None).text().splitlines()
    assert lines[0].split()[:5] == ["#", "verdict", "val", "loss", "train"] and "warnings" in lines[0]
    assert lines[1].split()[1] == "approved" and "TG511 x22, TG512 x22, TG208 x1" in lines[1]
    assert lines[2].split()[1] == "pruned" and "(pruned at step 5 of 20: ...)" in lines[2]
    assert lines[3].split()[1] == "rejected"
    assert "pruned: 1 candidate(s), 15 training step(s) saved" in lines


def test_the_markdown_carries_the_warnings_and_the_pruned_verdict():
    text = sweep_markdown(summarise([KEPT, PRUNED, REJECTED], None), "sweep.yaml", {})
    assert "| warnings |" in text and "TG511 x22, TG512 x22, TG208 x1" in text
    assert "✂️ pruned" in text and "15 training step(s) saved" in text
    assert "warnings TG511 x22" in candidate_markdown(KEPT)
    assert "pruned: pruned at step 5" in candidate_markdown(PRUNED)


def test_the_progress_line_says_where_a_candidate_was_pruned():
    assert last_verdict(PRUNED) == 'pruned {"lora.r":4} at step 5'
