"""A command run in a subprocess with its peak memory measured: RSS summed over its process tree.

    done = run_measured([sys.executable, "-m", "tunegate", "estimate", str(spec)])
    assert done.peak_mb <= 150, done.peak_mb

Polled every 20 ms with psutil (a declared dependency): a child's RSS counts while it lives, so a
command that forks a helper is measured whole, as issue 36 measured it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.support.paths import ROOT


@dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    peak_mb: float
    wall_s: float


def run_measured(args: list[str], timeout_s: float = 120.0, pss: bool = False,
                 env: dict[str, str] | None = None) -> Measured:
    """Run `args` from the repository root (offline) and return its output, peak RSS in MiB and wall time.
    pss: the proportional set size summed instead, where worker processes share pages (a page mapped
    by two processes counts half in each: what the machine holds, once)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak, me = 0, psutil.Process(proc.pid)
    try:
        while proc.poll() is None:
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError(f"{args[3:5]} still running after {timeout_s:g} s")
            peak = max(peak, tree_pss(me) if pss else tree_rss(me))
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
    return Measured(proc.returncode, out.decode(), err.decode(), peak / 2 ** 20, time.perf_counter() - start)


def tree_rss(me: psutil.Process) -> int:
    """Bytes resident in `me` and its descendants now (a process that ends meanwhile counts 0)."""
    return _tree_total(me, lambda p: p.memory_info().rss)


def tree_pss(me: psutil.Process) -> int:
    """Proportional bytes resident in `me` and its descendants now (Linux: /proc/PID/smaps_rollup)."""
    return _tree_total(me, lambda p: p.memory_full_info().pss)


def _tree_total(me: psutil.Process, size: Callable[[psutil.Process], int]) -> int:
    total = 0
    try:
        for p in [me, *me.children(recursive=True)]:
            try:
                total += size(p)
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


def tunegate_args(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "tunegate", *map(str, args)]
