"""What an OpenAI-compatible endpoint accepts in a chat request, learnt from the HTTP 400 it answers.

    dialect = dialect_for(base_url, model)       # max_tokens, temperature 0, JSON mode until told otherwise
    client.chat.completions.create(**dialect.params(max_tokens), ...)
    better = adjusted(dialect, exc.body)         # after a 400: the parameters it names, changed; or None

Endpoints differ in three optional parameters we send:
- o-series-style reasoning models refuse `max_tokens` ("use 'max_completion_tokens' instead") and
  any `temperature` but their default: both change together, as OpenAI documents for them;
- some refuse a `temperature` of 0 alone ("only the default (1) value is supported");
- some refuse `response_format` (JSON mode); the prompt asks for one JSON object either way;
- a server that predates `max_completion_tokens` refuses it: back to `max_tokens`.
A 400 naming one of them is answered once with the parameters changed, and what was learnt is kept
for the endpoint and model for the rest of the process, so later calls send the right ones first.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

_LOCK = threading.Lock()
_LEARNT: dict[tuple[str, str], Dialect] = {}
# The optional parameters we send, which a 400 may name.
_PARAMS = ("max_tokens", "max_completion_tokens", "temperature", "response_format")
# Words with which endpoints refuse a parameter (OpenAI: "Unsupported parameter", "Unsupported value",
# "does not support"; vLLM and others: "not supported", "is not allowed", "Extra inputs are not permitted").
_REFUSED = ("unsupported", "not supported", "does not support", "not allowed", "not permitted",
            "only the default", "invalid parameter", "unrecognized", "unknown parameter")


@dataclass(frozen=True)
class Dialect:
    """The optional parameters one endpoint takes."""

    token_param: str = "max_tokens"  # or "max_completion_tokens" (o-series-style reasoning models)
    temperature: bool = True         # send temperature 0; off where only the default is accepted
    json_mode: bool = True           # send response_format json_object

    def params(self, max_tokens: int) -> dict[str, Any]:
        """The request's optional parameters in this dialect."""
        out: dict[str, Any] = {self.token_param: max_tokens}
        if self.temperature:
            out["temperature"] = 0
        if self.json_mode:
            out["response_format"] = {"type": "json_object"}
        return out

    def differences(self) -> str:
        """What this dialect sends otherwise than the default one, in words ('' when nothing)."""
        parts = [self.token_param] if self.token_param != "max_tokens" else []
        parts += [] if self.temperature else ["no temperature"]
        parts += [] if self.json_mode else ["no response_format"]
        return ", ".join(parts)


def dialect_for(base_url: str, model: str) -> Dialect:
    """What this process has learnt of the endpoint and model (the default dialect at first)."""
    with _LOCK:
        return _LEARNT.get((base_url, model), Dialect())


def remember(base_url: str, model: str, dialect: Dialect) -> None:
    with _LOCK:
        _LEARNT[(base_url, model)] = dialect


def adjusted(dialect: Dialect, refusal: Any) -> Dialect | None:
    """The dialect with the parameters a 400's error names changed, or None when it names none we send.

    `refusal` is the error body (OpenAI's {"message", "param", "code"}) or its text. A value out of
    range ("max_tokens is too large") is not a refusal of the parameter: nothing changes.
    """
    text = _text(refusal)
    if not any(word in text for word in _REFUSED):
        return None
    param = refusal.get("param") if isinstance(refusal, dict) else None
    named = {param} if isinstance(param, str) and param in _PARAMS else {p for p in _PARAMS if p in text}
    new = dialect
    if dialect.token_param in named:
        switched = "max_completion_tokens" if dialect.token_param == "max_tokens" else "max_tokens"
        # o-series models refuse both max_tokens and temperature: the pair changes together
        new = replace(new, token_param=switched, temperature=new.temperature and switched == "max_tokens")
    if "temperature" in named:
        new = replace(new, temperature=False)
    if "response_format" in named or "json_object" in text:
        new = replace(new, json_mode=False)
    return None if new == dialect else new


def _text(refusal: Any) -> str:
    if isinstance(refusal, dict):
        return " ".join(str(refusal.get(k, "")) for k in ("message", "param", "code", "detail")).lower()
    return str(refusal).lower()
