"""The app tunegate's local Prefect API serves (tunegate.local_api.child): Prefect's own, whose
requests the SQLite store refused for a write conflict are run again here, at once, instead of
Prefect's client sleeping two seconds first.

    uvicorn --factory tunegate.local_api.app:create_app    # what the local API's child runs

Prefect's API on SQLite runs its writes in DEFERRED transactions; when another of its writers
commits between such a transaction's first read and its write, SQLite refuses the write at once
(WAL's busy snapshot: no busy timeout applies), the API answers 503 "Service Unavailable", and
Prefect's client sleeps `2**1` s before it sends the same request again (no Retry-After). Issue 15
measured it on the candidate's `gpu` slot request in 7 of 12 one-candidate sweeps, ~2 s each,
with both cores idle. Such a conflict is over in milliseconds, so the same request is run again
in this process after 20, 50, 100, 200 and 400 ms: what the client would send, sooner. A 503
that outlasts those (a store that stays locked) reaches the client as before, whose own backoff
then goes on. Only for the API this command starts: a server a user runs is theirs.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

BUSY = 503
AGAIN_AFTER_S = (0.02, 0.05, 0.1, 0.2, 0.4)


def create_app() -> App:
    """Prefect's API app, as its own ephemeral server builds it (the environment says how); a
    shared server's also stops itself once idle (tunegate.local_api.idle).

    Only uvicorn calls it, in the local API's child (`child.server_command`), a process that serves
    this app and nothing else: a process of tunegate's own, so the collector stays off while
    Prefect's server imports and builds its app (tunegate.processes.held_collections): its passes
    there walked every object made so far, again and again, for what one pass frees at the end.
    That pass still runs: Prefect's `create_app` ends with its own `gc.collect()` (an explicit call
    runs with the collector off), which frees what the build left in cycles before everything is
    frozen, so the server keeps no more memory than before. A fresh home's start went from 2.87 to
    2.51 CPU s (benchmarks/local_api_start.py, docs/benchmarks.md, session 47), paid by every command
    that starts a local API: a fresh Prefect home's first, or the first after one idled out."""
    from tunegate.processes.held_collections import collections_held, own_process

    own_process()
    with collections_held():
        from prefect.server.api.server import create_app as prefect_app

        from tunegate.local_api.idle import exit_when_idle

        return exit_when_idle(RunAgainWhenBusy(prefect_app()))


class RunAgainWhenBusy:
    """ASGI middleware: an HTTP request answered 503 is run again, with the same body, after each
    delay; the first other answer, or the last 503 (with its error), is the one sent. Any other
    answer is sent as it comes (streamed); lifespan and websocket traffic pass through untouched."""

    def __init__(self, app: App, delays: tuple[float, ...] = AGAIN_AFTER_S) -> None:
        self.app = app
        self.delays = delays

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        for delay in self.delays:
            answer = _HeldIfBusy(send)
            try:
                await self.app(dict(scope), _replay(body, receive), answer.send)
            except Exception:
                # Starlette sends the 503 and then raises the store's error again, for the server
                # to log; a request that will be run again has nothing to log yet.
                if not answer.busy:
                    raise
            if not answer.busy:
                return
            await asyncio.sleep(delay)
        await self.app(scope, _replay(body, receive), send)


class _HeldIfBusy:
    """Passes an answer on as it comes unless its status is 503; then drops it, and says so."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.busy = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.busy = message["status"] == BUSY
        if not self.busy:
            await self._send(message)


async def _whole_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to answer
            return b"".join(parts)
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The request's body once, then the connection's own messages (its disconnect)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
