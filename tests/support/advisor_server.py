"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the advisor's tests.

It answers POST /v1/chat/completions with scripted replies (status, body, delay) in order and
records every request's headers and body, so tests can assert what left the machine.
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


def completion(content: str, finish_reason: str = "stop") -> dict[str, Any]:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": "test-model",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class AdvisorServer:
    """Start with `with AdvisorServer([Reply(...), ...]) as server:`; `server.base_url` is /v1."""

    def __init__(self, replies: list[Reply]):
        self.replies = list(replies)
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
                reply = server._next()
                time.sleep(reply.delay_s)
                payload = (completion(reply.content, reply.finish_reason) if reply.content is not None
                           else {"error": {"message": "scripted failure", "type": "server_error"}})
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
