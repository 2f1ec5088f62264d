"""Every dialect of reasoning endpoint, each spoken by a real local server on 127.0.0.1.

The advice is read wherever the endpoint puts it (after a <think> block, in reasoning_content or
reasoning), a parameter the endpoint refuses with HTTP 400 is changed and the request sent once
more (and remembered for the endpoint), and the findings count the requests truthfully. What is sent
stays ours: no dataset content in any request, the retried one included.
"""
from __future__ import annotations

import json

import pytest

from tests.support.advisor_server import O_SERIES, AdvisorServer, Reply
from tests.support.estimate_specs import DATA, make_spec
from tunegate.advisor.stage import advise

pytest.importorskip("openai")

KEY_ENV = "TUNEGATE_TEST_ADVISOR_KEY"
KEY = "sk-test-CANARY-KEY-0123456789abcdef"
CANARIES = ["CANARY-TRAIN-8841", "CANARY-TRAIN-5127", "CANARY-VAL-3302"]
ANSWER = json.dumps({"summary": "Shorter sequences.", "suggestions": [
    {"setting": "training.max_seq_len", "current": 2048, "proposed": 1024,
     "rationale": "The records are far shorter than 2048 tokens.", "expected_time_saving": 0.05}]})
THINKING = "<think>The user wants speed. Maybe {\"draft\": 1}; sequences look short.</think>\n"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def run(server: AdvisorServer, max_retries: int = 0):
    spec = make_spec(advisor={"base_url": server.base_url, "model": "reasoner", "api_key_env": KEY_ENV,
                              "timeout_s": 5, "max_retries": max_retries, "max_tokens": 1500})
    return advise(spec, None, DATA)


def llm_suggestions(advice):
    return [(s.setting, s.proposed, s.verified) for s in advice.suggestions if s.source == "llm"]


def sent(server: AdvisorServer, i: int) -> dict:
    return json.loads(server.requests[i]["body"])


def test_an_answer_after_a_think_block_is_read():
    with AdvisorServer([Reply(content=THINKING + ANSWER)]) as server:
        advice, findings = run(server)
    assert advice.source == "rules+llm" and not [f for f in findings if f.code == "TG603"]
    assert llm_suggestions(advice) == [("training.max_seq_len", 1024, True)]
    assert "user wants" not in advice.model_dump_json()  # the reasoning is never kept


def test_an_answer_whose_json_is_in_reasoning_content_with_the_content_empty_is_read():
    with AdvisorServer([Reply(content="", reasoning="Records are short, so: " + ANSWER)]) as server:
        advice, findings = run(server)
    assert advice.source == "rules+llm" and llm_suggestions(advice) == [("training.max_seq_len", 1024, True)]


def test_an_answer_in_a_reasoning_field_is_read_too():
    with AdvisorServer([Reply(content="", reasoning=ANSWER, reasoning_key="reasoning")]) as server:
        advice, _ = run(server)
    assert advice.source == "rules+llm"


def test_an_answer_that_never_leaves_its_think_block_keeps_the_rules_advice_and_says_why():
    with AdvisorServer([Reply(content="<think>Let me think about the sequence length")]) as server:
        advice, findings = run(server)
    assert advice.source == "rules" and advice.suggestions
    (f,) = [f for f in findings if f.code == "TG603"]
    assert "only its reasoning" in f.message


def test_an_o_series_endpoint_gets_max_completion_tokens_and_no_temperature_after_one_400_and_keeps_them():
    with AdvisorServer([Reply(content=ANSWER)], refuses=O_SERIES) as server:
        advice, findings = run(server)
        assert advice.source == "rules+llm", [f.message for f in findings]
        assert len(server.requests) == 2  # the refused one and one retry
        first, retried = sent(server, 0), sent(server, 1)
        assert first["max_tokens"] == 1500 and first["temperature"] == 0
        assert retried["max_completion_tokens"] == 1500 and "max_tokens" not in retried
        assert "temperature" not in retried and retried["response_format"] == {"type": "json_object"}
        advice, _ = run(server)  # later calls in this process send the right parameters first
        assert advice.source == "rules+llm" and len(server.requests) == 3
        assert "max_completion_tokens" in sent(server, 2) and "temperature" not in sent(server, 2)
        bodies = "".join(r["body"] for r in server.requests)
    for secret in [*CANARIES, KEY, str(DATA), "train.jsonl"]:
        assert secret not in bodies


def test_an_endpoint_that_refuses_response_format_is_asked_again_without_it():
    with AdvisorServer([Reply(content="Here it is:\n```json\n" + ANSWER + "\n```")],
                       refuses=("response_format",)) as server:
        advice, _ = run(server)
        assert advice.source == "rules+llm" and len(server.requests) == 2
        assert "response_format" in sent(server, 0) and "response_format" not in sent(server, 1)
        assert sent(server, 1)["max_tokens"] == 1500 and sent(server, 1)["temperature"] == 0


def test_a_400_that_names_no_parameter_is_not_retried_and_one_request_is_reported():
    refused = {"message": f"The model 'reasoner' does not exist (key {KEY})", "type": "invalid_request_error"}
    with AdvisorServer([Reply(status=400, error=refused)]) as server:
        advice, findings = run(server, max_retries=2)
        assert len(server.requests) == 1
    (f,) = [f for f in findings if f.code == "TG602"]
    assert "HTTP 400 after 1 request:" in f.message and "does not exist" in f.message
    assert "retries" not in f.message and KEY not in f.message  # an echoed key is never repeated
    assert advice.source == "rules"


def test_retries_of_a_server_error_are_counted_as_sent():
    with AdvisorServer([Reply(status=503, headers={"retry-after-ms": "10"})]) as server:
        _, findings = run(server, max_retries=2)
        assert len(server.requests) == 3
    assert "HTTP 503 after 3 requests (2 retries)" in findings[0].message
