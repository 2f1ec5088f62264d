"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the advisor's tests, in any endpoint's dialect.

It answers POST /v1/chat/completions with scripted replies (status, body, delay) in order and
records every request's headers and body, so tests can assert what left the machine.

Dialects real endpoints speak:
- a reasoning model's answer: `Reply(content="<think>...</think>{...}")`, or the JSON in
  `reasoning_content` with the content empty (vLLM's reasoning parsers, DeepSeek's API):
  `Reply(content="", reasoning="...{...}")`, or in `reasoning` (`reasoning_key="reasoning"`);
- parameters refused with HTTP 400 before any scripted reply is used, worded as OpenAI words it:
  `AdvisorServer(replies, refuses=O_SERIES)` (max_tokens and a temperature other than 1, as
  o1/o3/o4-mini refuse them), `refuses=("response_format",)`.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the assistant message; None for an error body
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"
    reasoning: str | None = None  # a reasoning model's reasoning, beside the content
    reasoning_key: str = "reasoning_content"  # vLLM and DeepSeek; some servers say "reasoning"
    error: dict[str, Any] | None = None  # the error body of a non-200 reply (default: a server error)


# How OpenAI refuses each parameter (its API's wording for o-series models), by parameter.
REFUSALS = {
    "max_tokens": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                              "'max_completion_tokens' instead.", "type": "invalid_request_error",
                   "param": "max_tokens", "code": "unsupported_parameter"},
    "temperature": {"message": "Unsupported value: 'temperature' does not support 0 with this model. Only the "
                               "default (1) value is supported.", "type": "invalid_request_error",
                    "param": "temperature", "code": "unsupported_value"},
    "response_format": {"message": "Invalid parameter: 'response_format' of type 'json_object' is not supported "
                                   "with this model.", "type": "invalid_request_error",
                        "param": "response_format", "code": None},
}
O_SERIES = ("max_tokens", "temperature")


def completion(content: str, finish_reason: str = "stop", reasoning: str | None = None,
               reasoning_key: str = "reasoning_content") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message[reasoning_key] = reasoning
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": "test-model",
            "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def refusal(body: dict[str, Any], refuses: tuple[str, ...]) -> dict[str, Any] | None:
    """OpenAI's 400 error for the first refused parameter the request sends (temperature 1 is accepted)."""
    for name in refuses:
        if name in body and not (name == "temperature" and body[name] == 1):
            return REFUSALS[name]
    return None


class AdvisorServer:
    """Start with `with AdvisorServer([Reply(...), ...]) as server:`; `server.base_url` is /v1."""

    def __init__(self, replies: list[Reply], refuses: tuple[str, ...] = ()):
        self.replies = list(replies)
        self.refuses = refuses
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> AdvisorServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self) -> Reply:
        with self._lock:
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                body = self.rfile.read(length).decode("utf-8")
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                refused = refusal(json.loads(body), server.refuses)
                reply = Reply(status=400, error=refused) if refused else server._next()
                time.sleep(reply.delay_s)
                payload = (completion(reply.content, reply.finish_reason, reply.reasoning, reply.reasoning_key)
                           if reply.content is not None
                           else {"error": reply.error or {"message": "scripted failure", "type": "server_error"}})
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        return Handler
