"""The shared local API's own end (tunegate.local_api.shared): once no request has come for its
idle time and no command holds the users lock, it forgets its record and stops, as on SIGTERM
(uvicorn's graceful shutdown: Prefect's services end, the database is closed).

A command holds the users lock (shared) for its whole life, however long its flow goes without a
request (a long training between two state changes); the lock is the kernel's, so a command
killed outright lets go of it too. The server takes it exclusively before it stops: a command
that comes meanwhile waits for the lock, then finds the server gone and starts another, never a
server that is about to stop.
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from tunegate.local_api.state import SERVER_IDLE, SERVER_KEY, SERVER_PLACE, Place

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]
FORCED_EXIT_S = 30  # a graceful shutdown still going after this long (a stuck service) ends at once


class ExitWhenIdle:
    """ASGI middleware: counts requests and websockets in flight, and stops the server once it has
    been idle for `idle_s` with no user holding the place's users lock."""

    def __init__(self, app: App, idle_s: float, place: Place, key: str) -> None:
        self.app, self.idle_s, self.place, self.key = app, idle_s, place, key
        self.active = 0
        self.last = time.monotonic()
        self._watcher: asyncio.Task | None = None

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            if self._watcher is None:
                self._watcher = asyncio.get_running_loop().create_task(self._watch())
            await self.app(scope, receive, send)
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self.last = time.monotonic()

    async def _watch(self) -> None:
        # Checked four times per idle time, at most every 30 s: a server outlives its idle time by
        # at most a quarter of it.
        every_s = max(0.1, min(30.0, self.idle_s / 4))
        while True:
            await asyncio.sleep(every_s)
            if self.active or time.monotonic() - self.last < self.idle_s:
                continue
            if not _unused(self.place.open_users(self.key)):
                self.last = time.monotonic()  # a command holds it: its idle time starts when it ends
                continue
            self.place.forget(os.getpid())
            threading.Timer(FORCED_EXIT_S, os._exit, (0,)).start()
            os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's own graceful shutdown
            return


def _unused(fd: int) -> bool:
    """Take the users lock (`fd`) exclusively when no command holds it, and keep it until this
    process ends (a command coming meanwhile waits, then finds the server gone)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _HELD.append(fd)
    return True


_HELD: list[int] = []  # the users lock, once taken: held until the process ends


def exit_when_idle(app: App) -> App:
    """`app` wrapped to stop when idle, when the environment makes this server a shared one."""
    idle_s, place, key = (os.environ.get(name) for name in (SERVER_IDLE, SERVER_PLACE, SERVER_KEY))
    if not idle_s or not place or not key:
        return app
    with contextlib.suppress(ValueError):
        return ExitWhenIdle(app, float(idle_s), Place(Path(place)), key)
    return app
