"""Run `python -m tunegate ...` as a person at a terminal does: stderr on a pseudo-terminal.

stdout is a pipe (what a user redirects to a file or `jq`), stderr a real pty, so the command's
own `isatty()` checks see exactly what they would see in a shell.
"""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT


@dataclass
class Captured:
    code: int
    stdout: str
    stderr: str  # what the terminal received, escape sequences and all


def run_on_terminal(args: list[str], env: dict[str, str] | None = None, stderr_tty: bool = True,
                    cwd: Path = ROOT, timeout: float = 300) -> Captured:
    """Run the CLI with stderr on a pty (or a pipe when `stderr_tty` is False) and stdout on a pipe."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full_env.pop("NO_COLOR", None)
    full_env["TERM"] = "xterm-256color"
    cmd = [sys.executable, "-m", "tunegate", *args]
    if not stderr_tty:
        run = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, timeout=timeout)
        return Captured(run.returncode, run.stdout.decode(), run.stderr.decode())
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    received = _drain(master, proc, timeout)
    reader.join(timeout)
    proc.wait(timeout)
    os.close(master)
    return Captured(proc.returncode, out[0].decode(), received.decode("utf-8", "replace"))


def _drain(master: int, proc: subprocess.Popen, timeout: float) -> bytes:
    data = b""
    waited = 0.0
    while waited < timeout:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            waited += 0.2
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        data += chunk
    return data
