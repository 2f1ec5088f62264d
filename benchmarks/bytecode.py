"""Every checkout a benchmark runs, with its bytecode compiled first, as an installed package has it.

    from bytecode import compile_trees
    compile_trees([ROOT, *AGAINST])     # before the first timed run

A checkout made for a comparison (`git worktree add`, `git archive | tar -x`) has no __pycache__,
and where PYTHONDONTWRITEBYTECODE is set (these machines set it) Python never writes one: every
run of it compiles each module it imports again, in every process. A rejection of a small spec paid
~0.1 s of its 0.3 s for it (check_cli.py, session 35); a `preflight` of the same commit 0.65 CPU s
(10.38 against 11.03 s, 3 paired rounds, 2026-12-06), so a baseline without bytecode made a change
look faster than it was. A source edited since its bytecode was written leaves it stale, and is
compiled on every run too: compileall renews it.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def compile_trees(roots: list[Path]) -> None:
    """Compile (or renew) the bytecode of each checkout's `tunegate` package."""
    for root in roots:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "tunegate")], check=True,
                       stdout=subprocess.DEVNULL)
