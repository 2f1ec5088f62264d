"""Which request parameters a 400 asks us to change, read from the error bodies endpoints send."""
from __future__ import annotations

from tests.support.advisor_server import REFUSALS
from tunegate.advisor.endpoint_dialect import Dialect, adjusted

O_SERIES = Dialect(token_param="max_completion_tokens", temperature=False)


def test_openais_refusal_of_max_tokens_switches_to_the_o_series_pair():
    assert adjusted(Dialect(), REFUSALS["max_tokens"]) == O_SERIES
    assert O_SERIES.params(100) == {"max_completion_tokens": 100, "response_format": {"type": "json_object"}}


def test_a_refused_temperature_or_response_format_is_dropped_alone():
    assert adjusted(Dialect(), REFUSALS["temperature"]) == Dialect(temperature=False)
    assert adjusted(Dialect(), REFUSALS["response_format"]) == Dialect(json_mode=False)


def test_a_value_out_of_range_is_not_a_parameter_to_rename():
    too_large = {"message": "max_tokens is too large: 9000. This model supports at most 4096 completion tokens",
                 "param": "max_tokens", "code": None}
    assert adjusted(Dialect(), too_large) is None
    assert adjusted(Dialect(), "The model `reasoner` does not exist.") is None


def test_an_older_server_that_does_not_know_max_completion_tokens_gets_max_tokens_back():
    # vLLM's answer to a field its request model does not have (pydantic's extra_forbidden)
    vllm = {"object": "error", "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'max_completion_tokens'), "
                                          "'msg': 'Extra inputs are not permitted'}]", "code": 400}
    assert adjusted(O_SERIES, vllm) == Dialect(token_param="max_tokens", temperature=False)
    assert adjusted(O_SERIES, REFUSALS["max_tokens"]) is None  # already in that dialect: nothing to change
