"""Progress of long steps reaches a person's terminal on stderr, and nothing else ever does.

stderr is a real pseudo-terminal here (tests/support/terminal.py), stdout a pipe, as when a user
runs `tunegate check spec.yaml --json | jq`. TUNEGATE_PROGRESS_DELAY_S=0 shows every step at
once, so these small files need not take a second per stage to be seen.
"""
from __future__ import annotations

import json
import re

import pytest

from tests.support.terminal import run_on_terminal

QUICKSTART = "examples/quickstart.yaml"
EVERY_STEP = {"TUNEGATE_PROGRESS_DELAY_S": "0"}


def test_progress_reaches_the_terminal_on_stderr_and_stdout_holds_only_the_report():
    run = run_on_terminal(["check", QUICKSTART], env=EVERY_STEP)
    assert run.code == 0, run.stderr
    assert "reading train.jsonl" in run.stderr and "overlap" in run.stderr
    assert "\r" not in run.stdout and "\x1b" not in run.stdout
    assert run.stdout.startswith("[1/4] ✓ spec") and "NOT APPROVED for a full run" in run.stdout


def test_with_json_stdout_is_one_json_document_while_progress_draws():
    run = run_on_terminal(["check", QUICKSTART, "--json"], env=EVERY_STEP)
    assert run.code == 0
    assert json.loads(run.stdout)["gates_passed"] is True
    assert "reading validation.jsonl" in run.stderr


def test_quiet_silences_progress_on_a_terminal():
    run = run_on_terminal(["check", QUICKSTART, "--quiet"], env=EVERY_STEP)
    assert (run.code, run.stderr) == (0, "")


def test_no_progress_when_stderr_is_not_a_terminal():
    run = run_on_terminal(["check", QUICKSTART], env=EVERY_STEP, stderr_tty=False)
    assert (run.code, run.stderr) == (0, "")


def test_a_fast_command_shows_no_progress_at_the_default_delay():
    run = run_on_terminal(["lint", "examples/data/validation.jsonl"])
    assert run.code == 0 and "OK: 1 file(s)" in run.stdout
    assert run.stderr == ""


@pytest.mark.slow
def test_the_mini_run_shows_its_steps_with_their_loss(tiny_cache):
    run = run_on_terminal(["check", QUICKSTART, "--mini-run"], env=EVERY_STEP)  # tiny_cache: TUNEGATE_CACHE
    assert run.code == 0, run.stdout + run.stderr
    # A note is drawn if it is still the current one at a redraw (every 0.1 s): a step's lasts the
    # next step's time; the last step's only until the probe after it (the last alone was missed once).
    assert "mini-run" in run.stderr and re.search(r"step [1-4]/4 loss \d", run.stderr)
    assert "\x1b" not in run.stdout
