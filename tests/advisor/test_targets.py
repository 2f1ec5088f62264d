"""The LLM is offered only the settings the target trainer runs, and a suggestion it cannot run is refused.

tunegate's own trainer (`tunegate launch`) runs no sharding; an axolotl or TRL config runs on that
tool, which shards. Hardware settings are offered only for a physically impossible run.
"""
from __future__ import annotations

import json

import pytest

from tests.support.advisor_server import AdvisorServer, Reply
from tests.support.estimate_specs import DATA, make_spec
from tests.support.paths import DATA as TEST_DATA, EXAMPLES
from tunegate.advisor.stage import advise
from tunegate.advisor.targets import kind_of

pytest.importorskip("openai")

KEY_ENV = "TUNEGATE_TEST_ADVISOR_KEY"
SHARD = {"summary": "", "suggestions": [
    {"setting": "training.sharding", "current": "none", "proposed": "zero3", "rationale": "shard the states"}]}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-key")


def ask(target: str, answer: dict, **sections):
    with AdvisorServer([Reply(content=json.dumps(answer))]) as server:
        spec = make_spec(advisor={"base_url": server.base_url, "api_key_env": KEY_ENV, "max_retries": 0},
                         **sections)
        advice, _ = advise(spec, None, DATA, target=target)
        request = json.loads(server.requests[0]["body"])
    return advice, request["messages"][0]["content"], json.loads(request["messages"][1]["content"])


def llm(advice):
    return next(s for s in advice.suggestions if s.source == "llm")


def test_the_file_says_which_trainer_the_advice_is_for():
    assert kind_of(EXAMPLES / "worked_case.yaml") == "tunegate"
    assert kind_of(TEST_DATA / "configs" / "axolotl" / "lora-1b.yml") == "axolotl"
    assert kind_of(TEST_DATA / "configs" / "trl" / "sft.yaml") == "trl"


def test_tunegates_trainer_is_never_offered_sharding_and_refuses_it_when_the_llm_insists():
    advice, system, _ = ask("tunegate", SHARD, hardware={"count": 4})
    assert "tunegate launch" in system and "training.compile_mode" in system
    assert "training.sharding" not in system and "hardware.gpu" not in system
    s = llm(advice)
    assert not s.verified and "TG160" in s.rejected_reason


def test_an_axolotl_config_is_offered_sharding_which_its_tool_runs():
    advice, system, _ = ask("axolotl", SHARD, hardware={"count": 4})
    assert "runs on axolotl" in system and "training.sharding" in system
    assert "TG160" not in (llm(advice).rejected_reason or "")  # judged by the estimate, not refused


def test_hardware_is_offered_only_when_the_run_is_physically_impossible():
    _, system, payload = ask("tunegate", {"summary": "", "suggestions": []},
                             model={"id": str(DATA / "llama-70b")})
    assert "physically impossible on the declared hardware" in system and "hardware.gpu" in system
    assert payload["estimate"]["physically_impossible_on_declared_hardware"] is True
    _, system, payload = ask("tunegate", {"summary": "", "suggestions": []})
    assert "hardware.gpu" not in system
    assert payload["estimate"]["physically_impossible_on_declared_hardware"] is False
