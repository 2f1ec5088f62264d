"""The report's Markdown with its charts inlined, as Prefect's own UI shows it in a real Chromium.

A real `prefect server start` (its UI included) with a home of its own; the artifact is made by a
real flow run; the artifact's page is opened in Debian's Chromium (tests/support/browser.py).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.prefect_stack import free_port
from tunegate import check
from tunegate.output.markdown import markdown_with_charts

FLOW = """
import sys
from prefect import flow
from prefect.artifacts import create_markdown_artifact

@flow
def publish(text: str):
    return create_markdown_artifact(markdown=text, key="tunegate-report-test")

print(publish(open(sys.argv[1], encoding="utf-8").read()))
"""


@pytest.fixture
def prefect_ui(tmp_path):
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")},
           "PREFECT_HOME": str(tmp_path / "home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the Prefect server did not start"
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", env
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@pytest.mark.slow  # ~30 s: a Prefect server with its UI, a flow run, a browser
def test_prefect_s_ui_shows_every_chart_of_the_report_artifact(chromium, prefect_ui, tmp_path):
    url, env = prefect_ui
    text = markdown_with_charts(check(ROOT / "examples" / "quickstart.yaml"))
    assert "![memory_breakdown.svg](data:image/svg+xml;base64," in text
    (tmp_path / "report.md").write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", FLOW, str(tmp_path / "report.md")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    artifact = done.stdout.strip().splitlines()[-1]
    page = chromium.load(f"{url}/artifacts/artifact/{artifact}", settle="document.images.length > 0", wait_s=2,
                         screenshot=tmp_path / "shot.png")
    [chart] = [i for i in page.images if i["alt"] == "memory_breakdown.svg"]
    assert chart["complete"] and chart["naturalWidth"] == 800
    assert not [e for e in page.errors if "favicon" not in e]
