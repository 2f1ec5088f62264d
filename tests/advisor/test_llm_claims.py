"""Only what we verified reaches the user as ours (issue 11, item 3).

A real OpenAI-compatible server on 127.0.0.1 answers the worked case (tests/data/advisor) with
lying_answer.json: a summary with figures that are not ours, a wrong `current` value, inflated
savings, a change that makes the run slower, one that does not fit, and one with no `proposed`.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from tests.support.advisor_server import AdvisorServer, Reply
from tests.support.paths import DATA, ROOT
from tunegate.advisor.advice import fmt_hours
from tunegate.advisor.rules import advise_with_rules
from tunegate.advisor.stage import advise
from tunegate.spec.check import read_spec

pytest.importorskip("openai")

ADVISOR = DATA / "advisor"
KEY_ENV, KEY = "TUNEGATE_TEST_ADVISOR_KEY", "sk-test-claims-0123456789abcdef"
LIES = ("120 h", "75 h", "37 %", "2x", "30 GiB")
FLAG = "[figure not ours]"


def worked_case(base_url: str):
    result, spec = read_spec(ADVISOR / "worked_case.yaml")
    assert spec is not None, result.findings
    return spec.model_copy(update={"advisor": spec.advisor.model_copy(update={"base_url": base_url})})


@pytest.fixture(scope="module")
def answered():
    """The advice and findings for the worked case, from the lying server."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, KEY)
        with AdvisorServer([Reply(content=(ADVISOR / "lying_answer.json").read_text())]) as server:
            advice, findings = advise(worked_case(server.base_url))
    return advice, findings


def test_the_headline_is_ours_and_the_llms_figures_are_not_shown_as_predictions(answered):
    advice, findings = answered
    rules_only, _ = advise_with_rules(worked_case("http://127.0.0.1:9/v1"))
    ours = f"2 verified change(s): {fmt_hours(rules_only.hours_before)} -> {fmt_hours(rules_only.hours_after)}"
    assert advice.summary.startswith(ours)
    for lie in LIES:
        assert lie not in advice.summary and lie not in advice.llm_summary
    assert advice.llm_summary.count(FLAG) == 5 and "Projected wall clock drops" in advice.llm_summary
    assert any(f.code == "TG610" for f in findings)


def test_a_suggestion_whose_current_value_is_wrong_is_dropped_with_both_values(answered):
    advice, findings = answered
    assert not [s for s in advice.suggestions if s.setting == "training.grad_accum_steps" and s.source == "llm"]
    [wrong] = [f for f in findings if f.code == "TG609"]
    assert "current value is 4, but the spec has 8" in wrong.message


def test_the_saving_shown_is_ours_and_the_llms_claim_is_kept_apart(answered):
    advice, _ = answered
    compile_ = next(s for s in advice.suggestions if s.setting == "training.compile")
    assert compile_.verified and compile_.expected_time_saving == pytest.approx(0.2, abs=0.01)
    assert compile_.claimed_time_saving == 0.6


def test_rejected_suggestions_carry_no_saving(answered):
    advice, _ = answered
    rejected = [s for s in advice.suggestions if not s.verified]
    assert {s.setting for s in rejected} == {"training.gradient_checkpointing", "training.micro_batch_size"}
    assert all(s.expected_time_saving is None for s in rejected)


def test_a_change_that_makes_the_run_slower_is_not_advice_and_never_worsens_the_headline(answered):
    advice, _ = answered
    slower = next(s for s in advice.suggestions if s.setting == "training.gradient_checkpointing")
    assert not slower.verified and "makes the run slower by our estimate" in slower.rejected_reason
    rules_only, _ = advise_with_rules(worked_case("http://127.0.0.1:9/v1"))
    assert advice.hours_after == rules_only.hours_after  # the slower change is not folded in
    assert advice.hours_after <= advice.hours_before


def test_a_dropped_suggestion_names_the_field_that_failed(answered):
    _, findings = answered
    dropped = [f.message for f in findings if f.code == "TG604" and "dropped" in f.message]
    # quoted: pydantic's reason may echo the LLM's text
    assert dropped == ['suggestion 5 (training.attention) dropped: "proposed: Field required"']


def test_the_advise_command_prints_only_our_figures_and_quotes_the_llm(tmp_path):
    spec = yaml.safe_load((ADVISOR / "worked_case.yaml").read_text())
    for role in ("train", "validation"):
        spec["data"][role] = str((ADVISOR / spec["data"][role]).resolve())
    with AdvisorServer([Reply(content=(ADVISOR / "lying_answer.json").read_text())]) as server:
        spec["advisor"]["base_url"] = server.base_url
        (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
        out = subprocess.run([sys.executable, "-m", "tunegate", "advise", str(tmp_path / "spec.yaml")], cwd=ROOT,
                             capture_output=True, text=True, timeout=120, env={**os.environ, KEY_ENV: KEY})
    assert out.returncode == 0, out.stderr
    rules_only, _ = advise_with_rules(worked_case("http://127.0.0.1:9/v1"))
    # the note and the readings (issue 13) judge the user's own 120 h and the LLM's claimed savings,
    # each labelled as a claim with its verdict: the LLM's figures must not appear before them
    text, judged = out.stdout.split("\n\nnote: ", 1)
    note, readings = judged.split("\n  readings (", 1)
    assert note.startswith("the LLM's claimed savings take your 120 h to") and "(impossible)" in note
    assert text.splitlines()[0].startswith(f"predicted hours: {fmt_hours(rules_only.hours_before)} -> "
                                           f"{fmt_hours(rules_only.hours_after)}")
    for lie in LIES:
        assert lie not in text
    assert "your estimate 120 h needs 102% MFU: impossible" in readings and "75 h" not in readings
    assert "the LLM's words (its figures that are not ours removed)" in text
    assert "saves 20% by our estimate; the LLM claimed 60%, not confirmed" in text
    assert "40%" not in text and "30%" not in text  # no claimed saving on a rejected suggestion
    assert "why (the LLM's words): \"Checkpointing frees memory" in text  # quoted, one line (issue 12)
    assert KEY not in text + out.stderr
