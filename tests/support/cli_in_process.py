"""`tunegate ARGV` run in the test's own process, failing the test on a hang.

    code, text = run(["check", str(spec), "--html", str(page)], capsys)
"""
from __future__ import annotations

import signal

HANG_S = 20  # the longest a refusal may take (the first call imports Prefect)


class Hang(Exception):
    pass


def run(argv: list[str], capsys) -> tuple[int, str]:
    """(exit code, stdout + stderr) of `tunegate ARGV`; raises Hang past HANG_S seconds."""
    from tunegate.cli.main import main

    def hang(*_):
        raise Hang(f"tunegate {' '.join(argv)} did not answer in {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_S)
    try:
        code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out = capsys.readouterr()
    return code, out.out + out.err
