"""`tunegate check SPEC --advise` prints the verified suggestions, as `tunegate advise` does, before its verdict.

Run as a user runs it (main(argv), offline: no advisor key), on the worked case, whose run does not fit
its GPUs (the gate stops at the estimate, and the advisor reads the spec alone), on its impossible 70B
variant (new hardware), and on a spec that passes the estimate (the advisor stage's own advice).
"""
from __future__ import annotations

import json

import pytest
import yaml

from tests.support.estimate_specs import make_spec
from tests.support.paths import EXAMPLES

VERDICTS = ("APPROVED", "NOT APPROVED", "REJECTED")


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv("OXLO_API_KEY", raising=False)


def printed(argv, capsys) -> tuple[int, list[str]]:
    from tunegate.cli.main import main

    code = main(argv)
    return code, capsys.readouterr().out.split("\n")


def advice_lines(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("advice ("))
    return lines[start:]


def test_the_worked_case_shows_its_suggestions_with_the_compile_mode_then_one_verdict_last(capsys):
    code, lines = printed(["check", str(EXAMPLES / "worked_case.yaml"), "--advise"], capsys)
    assert code == 1  # the run does not fit its GPUs as written: the estimate rejects it
    advice = advice_lines(lines)
    assert advice[0].startswith("advice (the gate stopped at 'estimate', so the advisor read the spec alone")
    assert "    1. training.micro_batch_size: 2 -> 1, training.grad_accum_steps -> 16  [verified, needed to fit GPU " \
           "memory, 306.2 h]" in advice
    assert any(line.startswith("    2. training.compile: False -> True, training.compile_mode -> default  [verified")
               for line in advice)
    assert [line for line in lines if line.startswith(VERDICTS)] == [lines[-2]]  # one verdict, the last line
    assert lines[-2].startswith("REJECTED at stage 'estimate'")


def test_the_impossible_70b_variant_names_the_new_hardware_that_fits(capsys):
    _, lines = printed(["check", str(EXAMPLES / "worked_case_70b.yaml"), "--advise"], capsys)
    advice = "\n".join(advice_lines(lines))
    assert "hardware.gpu: A100-80GB -> GB200" in advice and "NEW HARDWARE" in advice
    assert "it fits on 4 x GB200" in advice and "model.quantization: none -> 4bit" in advice


def test_a_spec_that_passes_the_estimate_shows_the_advisor_stages_own_advice(tmp_path, capsys):
    spec = make_spec(estimate={"dataset_tokens": 100_000_000}).model_dump(mode="json")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, lines = printed(["check", str(path), "--advise"], capsys)
    assert code == 0
    advice = advice_lines(lines)
    assert advice[0] == "advice (each change verified by our estimate before it is shown):"
    assert any("training.compile: False -> True" in line for line in advice)
    assert sum(line.startswith(VERDICTS) for line in lines) == 1


def test_the_json_report_is_one_document_with_the_advice_in_its_facts(tmp_path, capsys):
    spec = make_spec(estimate={"dataset_tokens": 100_000_000}).model_dump(mode="json")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    from tunegate.cli.main import main

    main(["check", str(path), "--advise", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["facts"]["advice"]["suggestions"]
