"""What a piece of code imports, seen from a fresh interpreter (this process has imported everything)."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import ROOT


def modules_after(code: str) -> set[str]:
    """Every module in `sys.modules` once `code` has run in a fresh `python -c`, from the repository root."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    return set(json.loads(run.stdout.splitlines()[-1]))


def packages(modules: set[str]) -> set[str]:
    """The top-level packages of `modules` (`numpy` for `numpy.random`)."""
    return {m.split(".")[0] for m in modules}
