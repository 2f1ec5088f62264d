"""A real headless Chromium (Debian's `chromium` package), driven over the DevTools protocol.

    with Chromium() as browser:
        page = browser.load("file:///tmp/report.html", screenshot=Path("shot.png"))
        page.title, page.errors, page.images      # what a person's browser would show and log

Started as the project's tests ask: --headless --no-sandbox --disable-gpu
--disable-background-networking --no-first-run and a fresh --user-data-dir, on a DevTools port
on 127.0.0.1 only. `errors` collects everything the page's console would show as an error:
uncaught exceptions, console.error calls and the browser's own error log entries (a failed image,
a blocked request).
"""
from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0"]
_LISTENING = re.compile(rb"DevTools listening on (ws://\S+)")


def chromium_binary() -> str | None:
    found = os.environ.get("TUNEGATE_CHROMIUM")
    return found or next((p for p in map(shutil.which, CANDIDATES) if p), None)


@dataclass
class Page:
    title: str
    errors: list[str]
    images: list[dict[str, Any]]  # every <img>: alt, data-chart, complete, naturalWidth, naturalHeight
    text: str
    ids: list[str] = field(default_factory=list)


class Chromium:
    """One browser process for the `with` block; each `load` opens a fresh tab."""

    def __init__(self, binary: str | None = None, window: str = "1280,900"):
        self.binary = binary or chromium_binary()
        self.window = window
        if self.binary is None:
            raise FileNotFoundError("no Chromium: apt-get install chromium")
        self.profile = tempfile.mkdtemp(prefix="tunegate-chromium-")
        self.proc: subprocess.Popen | None = None
        self.ws_url = ""
        self.ids = itertools.count(1)
        self.tab: _Tab | None = None  # the open tab, which the events arriving now belong to

    def __enter__(self) -> Chromium:
        self.proc = subprocess.Popen([self.binary, *FLAGS, f"--window-size={self.window}",
                                      f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.ws_url = self._wait_listening(60)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _wait_listening(self, timeout: float) -> str:
        deadline, seen = time.monotonic() + timeout, b""
        assert self.proc is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stderr.fileno(), False)
        while time.monotonic() < deadline:
            chunk = self.proc.stderr.read() or b""
            seen += chunk
            match = _LISTENING.search(seen)
            if match:
                return match.group(1).decode()
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited {self.proc.returncode}: {seen.decode(errors='replace')[-2000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"chromium did not open its DevTools port: {seen.decode(errors='replace')[-2000:]}")

    def load(self, url: str, screenshot: Path | None = None, wait_s: float = 0.5,
             settle: str | None = None, settle_timeout: float = 60, script: str | None = None) -> Page:
        """Open `url` in a new tab, wait for the load event (and `settle`, a JS expression, to be true),
        run `script` (clicks for a screenshot), then read the page and optionally save a PNG screenshot."""
        from websockets.sync.client import connect

        with connect(self.ws_url, max_size=None, open_timeout=30) as browser:
            target = self._call(browser, "Target.createTarget", url="about:blank")["targetId"]
            session = self._call(browser, "Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            tab = _Tab(self, browser, session)
            for domain in ("Page", "Runtime", "Log"):
                tab.call(f"{domain}.enable")
            tab.call("Page.navigate", url=url)
            tab.wait_for("Page.loadEventFired", 60)
            if settle:
                tab.wait_until(settle, settle_timeout)
            tab.pump(wait_s)
            if script:
                tab.evaluate(script)
                tab.pump(2.0)
            page = tab.read()
            if screenshot is not None:
                tab.screenshot(screenshot)
            self._call(browser, "Target.closeTarget", targetId=target)
            return page

    def _call(self, ws: Any, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        message_id = next(self.ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        ws.send(json.dumps(message))
        while True:
            reply = json.loads(ws.recv(timeout=60))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.on_event(reply)

    def on_event(self, event: dict[str, Any]) -> None:
        """Events arriving while waiting for a reply are handed to the tab that owns them."""
        if self.tab is not None:
            self.tab.record(event)


class _Tab:
    def __init__(self, browser: Chromium, ws: Any, session: str):
        self.browser, self.ws, self.session = browser, ws, session
        self.errors: list[str] = []
        self.events: list[str] = []
        browser.tab = self

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser._call(self.ws, method, self.session, **params)

    def record(self, event: dict[str, Any]) -> None:
        method, params = event.get("method", ""), event.get("params", {})
        self.events.append(method)
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while method not in self.events:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.pump(0.1)

    def wait_until(self, expression: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} not true within {timeout} s")
            self.pump(0.5)

    def pump(self, seconds: float) -> None:
        """Read events for `seconds` (late console errors arrive after the load event)."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self.browser.on_event(json.loads(self.ws.recv(timeout=left)))
            except TimeoutError:
                return

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def read(self) -> Page:
        images = self.evaluate("[...document.images].map(i => ({alt: i.alt, chart: i.dataset.chart || null, "
                               "complete: i.complete, naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight}))")
        ids = self.evaluate("[...document.querySelectorAll('[id]')].map(e => e.id)")
        return Page(title=self.evaluate("document.title"), errors=list(self.errors), images=images or [],
                    text=self.evaluate("document.body ? document.body.innerText : ''") or "", ids=ids or [])

    def screenshot(self, path: Path) -> None:
        metrics = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1}
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path.write_bytes(base64.b64decode(shot["data"]))


@pytest.fixture(scope="session")
def chromium():
    """The session's browser; the test is skipped, saying why, where Chromium is not installed."""
    if chromium_binary() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    with Chromium() as browser:
        yield browser
