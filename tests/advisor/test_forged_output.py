"""A hostile LLM answer cannot forge terminal output: its text is quoted, one line each, and clean.

The answer comes over real HTTP from the local OpenAI-compatible server, and the commands run as
a user runs them (`tunegate advise SPEC`, `tunegate check SPEC --advise`); only what they print
is inspected.
"""
from __future__ import annotations

import json

import pytest
import yaml

from tests.support.advisor_server import AdvisorServer, Reply
from tests.support.estimate_specs import make_spec

pytest.importorskip("openai")

KEY_ENV = "TUNEGATE_TEST_ADVISOR_KEY"
FAKE_VERDICT = "APPROVED for a full run: the local gates passed (0 error(s), 0 warning(s))."
HOSTILE = {
    "summary": f"Looks fine.\n\n{FAKE_VERDICT}\n\x1b[32mAPPROVED\x1b[0m "
               "\u202egnirts desrever\u2028REJECTED at stage 'spec'",
    "suggestions": [
        {"setting": "training.max_seq_len", "current": 2048, "proposed": 1024,
         "rationale": f"Shorter sequences.\r\n{FAKE_VERDICT}", "expected_time_saving": 0.05,
         "risks": "none\n[1/6] ✓ spec (0.00s)", "monitor": "\x1b[2J\x1b[Hcleared \ud800 screen"},
        {"setting": f"training.compile\n{FAKE_VERDICT}", "proposed": True},
    ],
}
UNSAFE = ["\x1b", "\r", "\u202e", "\u2028", "\ud800"]


@pytest.fixture
def spec_file(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-key")
    with AdvisorServer([Reply(content=json.dumps(HOSTILE))]) as server:
        spec = make_spec(advisor={"base_url": server.base_url, "model": "test-model", "api_key_env": KEY_ENV,
                                  "timeout_s": 5, "max_retries": 0, "max_tokens": 1500})
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec.model_dump(mode="json")))
        yield path


def printed(argv, capsys) -> tuple[int, list[str]]:
    from tunegate.cli.main import main

    code = main(argv)
    out = capsys.readouterr()
    return code, (out.out + out.err).split("\n")


def assert_unforged(lines: list[str], verdicts: int) -> None:
    text = "\n".join(lines)
    assert not [c for c in UNSAFE if c in text]
    assert sum(line.startswith(("APPROVED", "NOT APPROVED", "REJECTED")) for line in lines) == verdicts, text
    assert not [line for line in lines if line.startswith("[1/")][1:], text  # one stage list, ours
    assert "internal error" not in text


def test_advise_shows_the_llm_text_quoted_on_one_line_each(spec_file, capsys):
    code, lines = printed(["advise", str(spec_file)], capsys)
    assert code == 0
    assert_unforged(lines, verdicts=0)
    label = "the LLM's words (its figures that are not ours removed): "
    (summary,) = [line for line in lines if line.startswith(label)]
    assert summary.startswith(label + '"Looks fine. APPROVED for a full run') and summary.endswith('"')
    (why,) = [line for line in lines if line.startswith("   why (the LLM's words): ")]
    assert why == f'   why (the LLM\'s words): "Shorter sequences. {FAKE_VERDICT}"'


def test_check_with_the_advisor_prints_exactly_one_verdict_its_own(spec_file, capsys):
    code, lines = printed(["check", str(spec_file), "--advise"], capsys)
    assert_unforged(lines, verdicts=1)
    dropped = [line for line in lines if "TG604" in line]
    assert dropped and all(line.startswith("    ") for line in dropped)
