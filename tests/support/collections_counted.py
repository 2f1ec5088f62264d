"""A module run as a command (`python -m MODULE ARGS`) in a fresh interpreter, its collections counted.

    got = run_as_main("tunegate.fullrun.trainer", ["--spec", SPEC, "--result", RESULT])
    got["during_stack"]   # the collections that ran once torch began to import, before anything was frozen

For the entry points that import the training stack with the collector held
(tunegate.processes.held_collections): none may run while torch and the rest import; afterwards
everything imported is frozen and collection is back on.
"""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import ROOT

AS_MAIN = """
import gc, json, runpy, sys
during_stack = []
gc.callbacks.append(lambda phase, info: phase == "start" and "torch" in sys.modules and gc.get_freeze_count() == 0
                    and during_stack.append(info["generation"]))
module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "during_stack": during_stack, "frozen": gc.get_freeze_count(),
                  "enabled": gc.isenabled()}))
"""


def run_as_main(module: str, argv: list[str]) -> dict:
    """{"code", "during_stack", "frozen", "enabled"} of `module` run as __main__ with `argv`."""
    done = subprocess.run([sys.executable, "-c", AS_MAIN, module, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])
