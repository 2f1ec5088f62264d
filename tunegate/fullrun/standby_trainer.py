"""A standby trainer: import the training stack, wait for a candidate's arguments, train it.

    python -m tunegate.fullrun.standby_trainer     # started by tunegate.fullrun.standby, never by hand

It reads one JSON line on stdin, {"argv": [...], "env": {...}}: the arguments of
`python -m tunegate.fullrun.trainer` and the candidate's environment, which it takes before the
trainer starts. EOF instead (the sweep ended first) exits 0. Nothing imports this module: run as
`-m`, it must not already be in sys.modules (runpy would warn, and run it twice).
"""
from __future__ import annotations

import atexit
import json
import os
import sys

READY = "trainer started ahead"  # its first output line, in the candidate's train.log

def _import_training_stack() -> None:
    """What the trainer imports before its first step (tunegate.fullrun.trainer.import_stack),
    imported before its arguments come."""
    try:
        from tunegate.fullrun.trainer import import_stack

        import_stack()
    except ImportError:
        return  # the trainer itself reports the missing package in its result


def main() -> int:
    """Import the training stack, wait for the trainer's arguments and environment on stdin, train."""
    import time

    from tunegate.processes.held_collections import collections_held, own_process

    start = time.perf_counter()
    own_process()
    with collections_held():  # the stack's objects live as long as this process (issue 33)
        _import_training_stack()
    print(f"{READY} (the training stack imported in {time.perf_counter() - start:.1f} s before its "
          "candidate was known)", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # never needed: the sweep ended first
    from tunegate.fullrun.trainer import main as train_main

    given = json.loads(line)
    os.environ.clear()
    os.environ.update(given["env"])
    return train_main(given["argv"])


def exit_now(code: int) -> None:
    """Exit once the result is written, without the interpreter's teardown of torch & co.

    The sweep waits for this process to end, and tearing down the modules of a process that
    imported torch, transformers and peft took 1.4-3 s on the 2-core machine (issue 15); its
    files are closed by then. The atexit handlers still run (logging flushes its handlers).
    """
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
