"""The local Prefect API's app (tunegate.local_api.app): a request Prefect answers 503 (SQLite
refused its write for a conflict) is run again in the server, with its body, instead of the client
sleeping 2 s; every other answer goes out as the app gave it.

Here around a small ASGI app that answers as Prefect's does; the sweeps of tests/cli run Prefect's
own app through it end to end. Prefect's app is built with the collector held, counted in a fresh
interpreter with the child's environment.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tunegate.local_api.app import RunAgainWhenBusy
from tunegate.local_api.child import server_env


class Locked(Exception):
    """sqlite3's "database is locked", as it reaches Starlette."""


class Store:
    """Answers the first `busy` requests as Prefect's API does a refused write (Starlette sends the
    503, then raises the error again for the server to log); then echoes the body it was sent."""

    def __init__(self, busy: int, status: int = 503) -> None:
        self.busy = busy
        self.status = status
        self.bodies: list[bytes] = []

    async def __call__(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        refused = len(self.bodies) <= self.busy
        status, answer = (self.status, b'{"exception_message": "Service Unavailable"}') if refused else (200, body)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": answer})
        if refused:
            raise Locked("database is locked")


def _post(app, body: bytes) -> httpx.Response:
    async def go() -> httpx.Response:
        # raise_app_exceptions off: the client gets what was sent, as from uvicorn, which logs the error
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            return await client.post("/api/v2/concurrency_limits/increment-with-lease", content=body)

    return asyncio.run(go())


def test_a_request_refused_for_a_conflict_is_answered_once_it_passes():
    store = Store(busy=2)
    answer = _post(RunAgainWhenBusy(store, delays=(0, 0, 0)), b'{"names": ["tag:gpu"]}')
    assert answer.status_code == 200 and answer.content == b'{"names": ["tag:gpu"]}'
    assert store.bodies == [b'{"names": ["tag:gpu"]}'] * 3  # the same body each time


def test_a_store_that_stays_busy_still_reaches_the_client_as_503_for_its_own_backoff():
    store = Store(busy=10)
    answer = _post(RunAgainWhenBusy(store, delays=(0, 0)), b"{}")
    assert answer.status_code == 503 and answer.json() == {"exception_message": "Service Unavailable"}
    assert len(store.bodies) == 3  # once, then once after each delay


def test_any_other_error_is_answered_as_it_came_and_not_run_again():
    store = Store(busy=1, status=500)
    answer = _post(RunAgainWhenBusy(store, delays=(0, 0)), b"{}")
    assert answer.status_code == 500 and len(store.bodies) == 1


@pytest.mark.slow  # Prefect's API starting in a child (~5 s)
def test_the_local_api_child_serves_prefects_own_api_through_it(tmp_path, monkeypatch):
    from tunegate.local_api.child import LocalApi

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    api = LocalApi()
    try:
        api.wait_ready()
        command = Path(f"/proc/{api.proc.pid}/cmdline").read_bytes().split(b"\0")
        assert b"tunegate.local_api.app:create_app" in command
        answer = httpx.post(f"{api.url}/v2/concurrency_limits/increment-with-lease",
                            json={"names": ["tag:gpu"], "slots": 1, "mode": "concurrency"}, timeout=30)
        assert answer.status_code == 200  # Prefect's route; no `gpu` limit exists on a fresh home
    finally:
        api.stop()


BUILD_COUNTED = """
import gc, json
passes, frozen_at_full = {0: 0, 1: 0, 2: 0}, []
def counted(phase, info):
    if phase == "start":
        passes[info["generation"]] += 1
        if info["generation"] == 2:
            frozen_at_full.append(gc.get_freeze_count())
gc.callbacks.append(counted)
from tunegate.local_api.app import create_app
from tunegate.processes.held_collections import is_own_process
passes.update({0: 0, 1: 0, 2: 0})
create_app()
print(json.dumps({"passes": passes, "frozen_at_full": frozen_at_full, "frozen": gc.get_freeze_count(),
                  "enabled": gc.isenabled(), "own": is_own_process()}))
"""


@pytest.mark.slow  # Prefect's server imported and its app built in a fresh interpreter (~3 s)
def test_the_app_is_built_with_the_collector_off_and_frozen_after_prefects_own_collection(tmp_path):
    done = subprocess.run([sys.executable, "-c", BUILD_COUNTED], capture_output=True, text=True, timeout=120,
                          env=server_env(PREFECT_HOME=str(tmp_path)), check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    # No pass of the young generations: they run only when the collector is on. The one full pass is
    # Prefect's own gc.collect() at its create_app's end, before anything was frozen: it frees the build's
    # cycles as it always did.
    assert (got["passes"]["0"], got["passes"]["1"], got["frozen_at_full"]) == (0, 0, [0])
    assert got["frozen"] > 100_000 and got["enabled"] and got["own"]
