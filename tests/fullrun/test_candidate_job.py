"""A sweep candidate is one job: the child that ran its mini-run waits, then trains or ends.

A real fork server process (`tunegate.fullrun.forks`), as tests/fullrun/test_fork_server.py, started
in each test (~7 s: the training stack's imports), in the test's own phase: a job runs only in the
environment the server started with, and pytest names its phase there (PYTEST_CURRENT_TEST). The
mini-run here is one the spec stage already rejected (skipped at once); the training one that
cannot read its spec (TG709): what is checked is which process runs what, not the numbers
(tests/flows/test_sweep.py sweeps through it; the validation losses are compared in the report).
"""
from __future__ import annotations

import contextlib
import resource
from pathlib import Path

import pytest

from tests.support.minirun import load_spec
from tunegate.errors import UsageError
from tunegate.facts import GateFacts
from tunegate.fullrun import forks, held_jobs
from tunegate.fullrun.candidate_job import reset_peak_rss
from tunegate.fullrun.forked_jobs import FORKED
from tunegate.fullrun.forks import ForkServer
from tunegate.fullrun.launcher import candidate_env, train_apart
from tunegate.spec.check import parse_spec
from tunegate.sweep import mini_run_apart


@contextlib.contextmanager
def _serving():
    """This sweep's fork server, started in the test itself (the job's environment is the test's)."""
    server, env = ForkServer(), candidate_env(load_spec("good"), 1)
    assert server.start(env)
    saved, forks.FORKS = forks.FORKS, server
    try:
        yield server
    finally:
        forks.FORKS = saved
        server.close()


def _mini_run(tmp_path: Path):
    spec = tmp_path / "candidate.yaml"
    spec.write_text("model: [not, a, mapping]\n", encoding="utf-8")
    parsed = parse_spec(spec)
    report = mini_run_apart.mini_run_report(parsed, GateFacts())
    return spec, report, held_jobs._HELD[str(spec.resolve())]


@pytest.mark.nightly  # ~7 s (the server's imports); the next test runs the same child in `make test`
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


def test_the_training_after_a_mini_run_measures_its_peak_rss_from_where_it_starts():
    freed = bytearray(256 << 20)
    freed[::4096] = bytes(len(range(0, len(freed), 4096)))  # every page written: resident
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    del freed  # what a mini-run frees before the training starts
    reset_peak_rss()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after < before - (200 << 10), (before, after)  # KiB: the 256 MiB peak is no longer counted


def test_the_training_environment_reaches_the_held_child_through_a_pipe_never_a_file(tmp_path):
    with _serving():
        spec, _, held = _mini_run(tmp_path)
        env = {**held.env, "MLFLOW_TRACKING_TOKEN": "token-never-on-disk"}  # a late setting: the same start
        assert held_jobs.train(spec, ["--help"], env) is held
        written = [path for path in held.folder.rglob("*") if path.is_file()]  # the FIFO is no file
        assert written and all(b"token-never-on-disk" not in path.read_bytes() for path in written)
        held.job.wait(60)
        held_jobs.tidy(held)


def test_a_candidate_whose_mini_run_cannot_run_as_asked_raises_that_usage_error_and_waits_for_nothing(
        tmp_path, monkeypatch):
    # The cache the built-in model is built in is a file: in-process, the stage raises a UsageError
    # (exit 2); forked, it did end as an "internal error" with a traceback (the child's exception).
    (tmp_path / "afile").write_text("not a folder")
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "afile"))
    parsed = parse_spec(Path(__file__).resolve().parents[1] / "data" / "minirun" / "good.yaml")
    with _serving() as server:
        with pytest.raises(UsageError, match=r"TUNEGATE_CACHE=.*afile is not a folder tunegate can use"):
            mini_run_apart.mini_run_report(parsed, GateFacts())
        assert str(Path(parsed.path).resolve()) not in held_jobs._HELD and server.running()
