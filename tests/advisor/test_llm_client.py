"""The LLM advisor over real HTTP: the openai client against a local server on 127.0.0.1."""
from __future__ import annotations

import json
import logging

import pytest

from tests.support.advisor_server import AdvisorServer, Reply
from tests.support.estimate_specs import DATA, make_spec
from tunegate.advisor.stage import advise

pytest.importorskip("openai")

KEY_ENV = "TUNEGATE_TEST_ADVISOR_KEY"
KEY = "sk-test-CANARY-KEY-0123456789abcdef"
CANARIES = ["CANARY-TRAIN-8841", "CANARY-TRAIN-5127", "CANARY-VAL-3302"]
GOOD = {
    "summary": "Compile the model and use a larger micro batch.",
    "suggestions": [
        {"setting": "training.compile", "current": False, "proposed": True,
         "rationale": "Fuses elementwise ops.", "expected_time_saving": 0.2, "risks": "warm-up",
         "monitor": "step time"},
        {"setting": "training.max_seq_len", "current": 2048, "proposed": 1024,
         "rationale": "The longest record is far shorter than 2048 tokens.",
         "expected_time_saving": 0.05, "risks": "truncation of longer records", "monitor": "truncated count"},
    ],
}


def spec_for(server, **training):
    return make_spec(advisor={"base_url": server.base_url, "model": "test-model", "api_key_env": KEY_ENV,
                              "timeout_s": 2, "max_retries": 1, "max_tokens": 1500},
                     training=training)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def reply(obj) -> Reply:
    return Reply(content=json.dumps(obj))


def run(replies, caplog=None, **training):
    with AdvisorServer(replies) as server:
        advice, findings = advise(spec_for(server, **training), {}, DATA)
    return advice, findings, server


def test_a_good_answer_is_parsed_verified_and_merged_with_the_rules():
    advice, findings, server = run([reply(GOOD)])
    assert advice.source == "rules+llm"
    assert advice.llm_summary == GOOD["summary"]  # the LLM's words, kept apart from our headline
    assert advice.summary.startswith("2 verified change(s)") and "(our estimate)" in advice.summary
    compile_ = next(s for s in advice.suggestions if s.setting == "training.compile")
    assert compile_.verified and compile_.source == "rules+llm"  # the rules proposed it too
    shorter = next(s for s in advice.suggestions if s.source == "llm")
    assert shorter.proposed == 1024 and shorter.verified, shorter.rejected_reason
    assert advice.hours_after <= advice.hours_before
    assert not [f for f in findings if f.severity == "warning"]
    sent = json.loads(server.requests[0]["body"])
    assert sent["max_tokens"] == 1500 and sent["model"] == "test-model"
    assert sent["response_format"] == {"type": "json_object"}
    assert "Never suggest new hardware" in sent["messages"][0]["content"]


def test_the_server_never_receives_dataset_content_paths_or_the_key(caplog):
    caplog.set_level(logging.DEBUG)
    advice, findings, server = run([reply(GOOD)])
    body = server.requests[0]["body"]
    for secret in [*CANARIES, KEY, str(DATA), "train.jsonl"]:
        assert secret not in body
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"  # the key travels only in this header
    logged = "\n".join(r.getMessage() for r in caplog.records)
    report = advice.model_dump_json() + json.dumps([f.model_dump() for f in findings])
    assert KEY not in logged and KEY not in report


def test_malformed_json_keeps_the_rules_advice_with_a_warning():
    advice, findings, _ = run([Reply(content="Sure! Here are my thoughts: {not json")])
    assert advice.source == "rules" and advice.suggestions
    assert [(f.code, f.severity) for f in findings] == [("TG603", "warning")]


def test_a_429_is_retried_and_the_second_answer_used():
    advice, findings, server = run([Reply(status=429, headers={"retry-after-ms": "10"}), reply(GOOD)])
    assert len(server.requests) == 2
    assert advice.source == "rules+llm"


def test_a_500_after_retries_keeps_the_rules_advice_with_a_warning():
    advice, findings, server = run([Reply(status=500, headers={"retry-after-ms": "10"})])
    assert len(server.requests) == 2  # the first try and max_retries=1
    assert advice.source == "rules"
    assert findings[0].code == "TG602" and "HTTP 500" in findings[0].message


def test_a_timeout_keeps_the_rules_advice_with_a_warning():
    advice, findings, _ = run([Reply(content=json.dumps(GOOD), delay_s=3.0)])
    assert advice.source == "rules"
    assert findings[0].code == "TG602" and "did not answer within 2 s" in findings[0].message


def test_an_answer_cut_off_at_max_tokens_is_not_used():
    advice, findings, _ = run([Reply(content='{"summary": "x", "sugg', finish_reason="length")])
    assert advice.source == "rules" and findings[0].code == "TG603"
    assert "max_tokens" in findings[0].message


def test_a_suggestion_that_would_not_fit_memory_is_rejected():
    oversized = {"summary": "", "suggestions": [
        {"setting": "training.micro_batch_size", "current": 2, "proposed": 64,
         "companions": {"training.max_seq_len": 8192, "training.grad_accum_steps": 1},
         "changes_global_batch": True, "rationale": "bigger is faster"}]}
    advice, findings, _ = run([reply(oversized)])
    llm = next(s for s in advice.suggestions if s.source == "llm")
    assert not llm.verified and "would not fit in GPU memory" in llm.rejected_reason
    assert any(f.code == "TG604" and "rejected" in f.message for f in findings)


def test_new_hardware_for_a_feasible_job_is_rejected():
    upgrade = {"summary": "", "suggestions": [
        {"setting": "hardware.gpu", "current": "A100-80GB", "proposed": "H100-SXM", "rationale": "faster"}]}
    advice, _, _ = run([reply(upgrade)])
    llm = next(s for s in advice.suggestions if s.source == "llm")
    assert not llm.verified and "proposes new hardware" in llm.rejected_reason


def test_a_changed_global_batch_must_be_declared():
    silent = {"summary": "", "suggestions": [
        {"setting": "training.grad_accum_steps", "current": 4, "proposed": 8, "rationale": "smoother"}]}
    advice, _, _ = run([reply(silent)])
    # the spec's micro batch 2 x accumulation 4 is a global batch of 8; accumulation 8 makes it 16
    llm = next(s for s in advice.suggestions if s.source == "llm")
    assert not llm.verified and "changes the global batch from 8 to 16" in llm.rejected_reason


def test_paths_urls_and_unknown_settings_are_dropped_before_verification():
    hostile = {"summary": "ok\u202e", "suggestions": [
        {"setting": "data.train", "proposed": "/etc/passwd"},
        {"setting": "model.trust_remote_code", "proposed": True},
        {"setting": "training.attention", "proposed": "http://evil.example/kernel"},
        {"setting": "training.compile", "proposed": True, "rationale": "fine"}]}
    advice, findings, _ = run([reply(hostile)])
    dropped = [f.message for f in findings if f.code == "TG604"]
    assert len(dropped) == 3
    assert all(s.setting in {"training.compile", "training.micro_batch_size", "training.attention"}
               and s.proposed != "http://evil.example/kernel" for s in advice.suggestions)
    assert "\u202e" not in advice.summary


def test_without_a_key_no_request_is_made_and_a_warning_says_why(monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    advice, findings, server = run([reply(GOOD)])
    assert server.requests == []
    assert advice.source == "rules" and advice.suggestions
    assert findings[0].code == "TG601" and KEY_ENV in findings[0].message


def test_plain_http_to_a_remote_host_is_refused():
    spec = make_spec(advisor={"base_url": "http://advisor.example.com/v1", "api_key_env": KEY_ENV})
    advice, findings = advise(spec, {}, DATA)
    assert advice.source == "rules" and findings[0].code == "TG606"
