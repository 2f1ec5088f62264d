"""Run tunegate's flows the way a user does: `python -m tunegate ...` in a process of its own.

Each process uses Prefect's ephemeral mode (no server to start) on a Prefect home the test owns,
so what Prefect writes (its database, result storage) lands where the test can inspect it and
two runs can share it, as a user's reruns share `~/.prefect`.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

# Settings a developer's shell may carry that would point the child at another API or home.
_INHERITED_PREFIX = ("PREFECT_", "MLFLOW_")


def cli_env(prefect_home: Path, **extra: str) -> dict[str, str]:
    """The child's environment: ours without Prefect/MLflow settings, plus a private Prefect home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIX)}
    env.update(PREFECT_HOME=str(prefect_home), PREFECT_SERVER_ALLOW_EPHEMERAL_MODE="true",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1",
               PYTHONUNBUFFERED="1",
               # Library chatter (tunegate.cli.logs) lands beside Prefect's home, where the test can read it.
               TUNEGATE_LOG_FILE=str(prefect_home / "tunegate.log"),
               # A fresh home migrates Prefect's database first: ~7 s on an idle 2-core machine, over
               # Prefect's 20 s default on a loaded one or with every logger at DEBUG.
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
    env.update(extra)
    return env


def start_cli(args: list[str], env: dict[str, str], stdout: Path, stderr: Path) -> subprocess.Popen:
    """Start `python -m tunegate ARGS` in its own process group (so the ephemeral Prefect server
    it spawns can be killed with it), writing its output to files. Ctrl-C (SIGINT) interrupts it
    as it does a command started from a terminal, even where the tests run as a shell's background
    job: such a job ignores SIGINT, its children inherit that, and Python then never raises
    KeyboardInterrupt (a CI run started so waited out the Ctrl-C test)."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "tunegate", *args], cwd=ROOT, env=env,
                                stdout=out, stderr=err, start_new_session=True, preexec_fn=_sigint_as_at_a_terminal)


def _sigint_as_at_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(args: list[str], env: dict[str, str], stdout: Path, stderr: Path, timeout: float = 600) -> int:
    """Run `python -m tunegate ARGS` to the end; return its exit code."""
    proc = start_cli(args, env, stdout, stderr)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process and everything it started (its own group), like a lost node."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)
