"""A sweep candidate is one job: the child that ran its mini-run waits, then trains or ends.

Real fork server processes (`tunegate.fullrun.forks`), as tests/fullrun/test_fork_server.py. The
mini-run here is one the spec stage already rejected (skipped at once); the training one that
cannot read its spec (TG709): what is checked is which process runs what, not the numbers
(tests/flows/test_sweep.py sweeps through it; the validation losses are compared in the report).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.support.minirun import load_spec
from tunegate.facts import GateFacts
from tunegate.fullrun import forks, held_jobs
from tunegate.fullrun.fork_server import FORKED
from tunegate.fullrun.forks import ForkServer
from tunegate.fullrun.launcher import candidate_env, train_apart
from tunegate.spec.check import parse_spec
from tunegate.sweep import mini_run_apart

pytestmark = pytest.mark.nightly  # ~7 s each: the server's imports


@contextlib.contextmanager
def _serving():
    """This sweep's fork server, started in the test itself (the job's environment is the test's)."""
    serving, env = ForkServer(), candidate_env(load_spec("good"), 1)
    assert serving.start(env)
    saved, forks.FORKS = forks.FORKS, serving
    try:
        yield serving
    finally:
        forks.FORKS = saved
        serving.close()


def _mini_run(tmp_path: Path):
    spec = tmp_path / "candidate.yaml"
    spec.write_text("model: [not, a, mapping]\n", encoding="utf-8")
    parsed = parse_spec(spec)
    report = mini_run_apart.mini_run_report(parsed, GateFacts())
    return spec, report, held_jobs._HELD[str(spec.resolve())]


def test_the_child_of_a_candidate_that_is_not_trained_ends_when_released(tmp_path):
    with _serving():
        spec, report, held = _mini_run(tmp_path)
        assert report.stage("mini-run").status == "skipped" and held.job.poll() is None  # waiting for the sweep
        held_jobs.release(spec)
    assert held.job.returncode == 0 and not held.folder.exists()
    assert str(spec.resolve()) not in held_jobs._HELD


def test_an_approved_candidate_trains_in_the_process_that_ran_its_mini_run(tmp_path):
    lines: list[str] = []
    with _serving():
        spec, _, held = _mini_run(tmp_path)
        # what the sweep's evaluate does next; the spec is gone by then, so the trainer answers TG709 at once
        spec.unlink()
        result = train_apart(load_spec("good"), spec, tmp_path / "out", 2, threads=1, log=lines.append)
    assert result.status == "failed" and result.codes == ["TG709"], lines
    assert lines[0].startswith(f"{FORKED} (pid {held.job.pid},")  # the mini-run's child, not a new fork
    assert held.job.returncode == 1 and not held.folder.exists()
