"""`mlflow ui` on a tunegate store, for one test module, and the README's screenshot of it.

    with MlflowUi(Path("mlflow.db")) as ui:
        ui.url                      # http://127.0.0.1:<port>
    python -m tests.support.mlflow_ui docs/images/mlflow-comparison.png    # a real sweep of examples/sweep.yaml

The UI runs as a user starts it (`mlflow ui --backend-store-uri sqlite:///...`), on 127.0.0.1 and a
free port, in its own process group, stopped (with its workers) on the way out.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.support.prefect_stack import free_port

CHART_VIEW = "document.body && document.body.innerText.includes('candidates/val_loss')"


class MlflowUi:
    """`mlflow ui` on the store `db` for the `with` block."""

    def __init__(self, db: Path):
        self.db, self.port = db, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> MlflowUi:
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
        with open(self.db.parent / "mlflow-ui.log", "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", f"sqlite:///{self.db}",
                 "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.db.parent, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.db.parent / "mlflow-ui.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{self.url}/health", timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"mlflow ui not up after 120 s: {(self.db.parent / 'mlflow-ui.log').read_text()[-3000:]}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)


def screenshot(target: Path) -> None:
    """Sweep a copy of examples/sweep.yaml, open the link `tunegate runs` prints, save the chart view."""
    from tests.support.browser import Chromium
    from tests.support.paths import EXAMPLES, ROOT

    with tempfile.TemporaryDirectory(prefix="tunegate-screenshot-") as tmp:
        work = Path(tmp) / "examples"
        shutil.copytree(EXAMPLES, work, ignore=shutil.ignore_patterns("mlflow.db*", ".tunegate", "mlartifacts"))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(Path(tmp) / "prefect")}
        subprocess.run([sys.executable, "-m", "tunegate", "sweep", str(work / "sweep.yaml")], env=env, check=True)
        runs = subprocess.run([sys.executable, "-m", "tunegate", "runs", "--spec", str(work / "sweep.yaml")],
                              env=env, check=True, capture_output=True, text=True).stdout
        page = runs.rsplit("http://127.0.0.1:5000/", 1)[1].strip()
        with MlflowUi(work / "mlflow.db") as ui, Chromium(window="1900,860") as browser:
            # The assistant's panel closed, for room; the sweep's row expanded, to show its candidates.
            clicks = ("document.querySelector('[data-component-id=\"mlflow.assistant.chat_panel.close\"]')?.click();"
                      "[...document.querySelectorAll('button[data-component-id*=\"runnamecellrenderer\"]')]"
                      ".forEach(b => b.click())")
            browser.load(f"{ui.url}/{page}", settle=CHART_VIEW, wait_s=4, script=clicks, screenshot=target)


if __name__ == "__main__":
    screenshot(Path(sys.argv[1]).resolve())
