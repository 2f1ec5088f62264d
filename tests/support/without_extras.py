"""Run tunegate commands as if some optional packages were not installed, in a process of their own.

    python -m tests.support.without_extras torch,transformers '["check", "spec.yaml", "--mini-run"]' ...

prints one JSON line: for each command (a JSON list of arguments), its exit code and what it wrote
to stderr. The packages are hidden, not uninstalled: every finder on `sys.meta_path` is wrapped so
that it finds nothing under their names, which is what Python sees when they are absent
(`importlib.util.find_spec` returns None, `import` raises ModuleNotFoundError). The commands run
one after another through `tunegate.cli.main.main`, in this one process, so the walk pays the
interpreter's start-up once per set of hidden packages.
"""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from typing import Any

from tests.support.paths import ROOT


class _Hiding:
    """A meta-path finder that finds nothing of the hidden packages and defers everything else."""

    def __init__(self, finder: Any, hidden: set[str]):
        self.finder, self.hidden = finder, hidden

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.split(".")[0] in self.hidden:
            return None
        find = getattr(self.finder, "find_spec", None)
        return find(name, path, target) if find is not None else None

    def __getattr__(self, attr: str) -> Any:  # invalidate_caches and the rest, as the finder has them
        return getattr(self.finder, attr)


def hide(packages: set[str]) -> None:
    """From now on, this process cannot import `packages` (nor find them), as if never installed."""
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in packages)
    if loaded:
        raise RuntimeError(f"already imported, cannot be hidden: {loaded[:5]}")
    sys.meta_path[:] = [_Hiding(f, packages) for f in sys.meta_path]


def run_commands(commands: list[list[str]]) -> list[tuple[int, str]]:
    from tunegate.cli.main import main

    results = []
    for argv in commands:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
        results.append((code, err.getvalue()))
    return results


def walk(packages: list[str], commands: list[list[str]], cwd: str, timeout: float = 300) -> list[tuple[int, str]]:
    """Run `commands` in a fresh process (in `cwd`) with `packages` hidden; their exit codes and stderr."""
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env = {k: v for k, v in env.items() if not k.startswith("PREFECT_API")}
    proc = subprocess.run([sys.executable, "-m", "tests.support.without_extras", ",".join(packages),
                           *(json.dumps(c) for c in commands)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"the walk itself failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return [tuple(r) for r in json.loads(proc.stdout.splitlines()[-1])]


if __name__ == "__main__":
    hide({p for p in sys.argv[1].split(",") if p})
    outcome = run_commands([json.loads(a) for a in sys.argv[2:]])
    sys.stdout.write(json.dumps(outcome) + "\n")
