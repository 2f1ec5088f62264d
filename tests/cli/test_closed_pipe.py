"""A reader that goes away (`tunegate gpus | head -1`) ends the command quietly, as SIGPIPE ends a
Unix tool (exit 141), never as an internal error of ours."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import EXAMPLES, ROOT


def run_into_closed_pipe(*args: str) -> tuple[int, str]:
    """Run `tunegate ARGS` with its stdout a pipe whose reader is gone before anything is written."""
    proc = subprocess.Popen([sys.executable, "-m", "tunegate", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("args", [("gpus",), ("check", "--train", str(EXAMPLES / "data" / "train.jsonl"), "--json")])
def test_a_closed_pipe_ends_the_command_with_141_and_no_message(args):
    code, err = run_into_closed_pipe(*args)
    assert code == 141
    assert "internal error" not in err and "BrokenPipeError" not in err, err
