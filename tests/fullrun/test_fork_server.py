"""The fork server: one process imports the training stack, each candidate's job is a child forked from it.

Real `python -m tunegate.fullrun.fork_server` processes. It forks only while it has one thread;
a job is forked only for the environment the server started with; the server and its children
die with the sweep's process. tests/flows/test_sweep.py trains and mini-runs through it in
`make test`; the job-level checks that wait for torch's imports are nightly.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.minirun import DATA, load_spec
from tests.support.paths import ROOT
from tests.support.processes import gone
from tunegate.fullrun.forks import ForkServer
from tunegate.fullrun.launcher import candidate_env, follow_launched

SPEC = DATA / "good.yaml"


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_forking_is_refused_once_the_server_has_a_second_thread():
    said = _python("import threading, time\n"
                   "from tunegate.fullrun.fork_server import unsafe_to_fork\n"
                   "print(unsafe_to_fork())\n"
                   "threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n"
                   "print(unsafe_to_fork())\n")
    assert said.splitlines() == ["None", "the fork server has 2 threads"]


def test_a_job_for_another_environment_is_not_forked():
    server, spec = ForkServer(), load_spec("good")
    assert server.start(candidate_env(spec, 1))
    try:
        # other torch threads: torch read them at the server's import, so a cold process instead
        assert server.run("train", {"argv": []}, candidate_env(spec, 2)) is None
        assert server.running()
    finally:
        server.close()
    assert not server.running() and server.run("train", {"argv": []}, candidate_env(spec, 1)) is None


def test_a_killed_parent_leaves_no_fork_server():
    code = ("import time\n"
            "from tests.support.minirun import load_spec\n"
            "from tunegate.fullrun.launcher import candidate_env\n"
            "from tunegate.fullrun.forks import FORKS\n"
            "FORKS.start(candidate_env(load_spec('good'), 1))\n"
            "print(FORKS._proc.pid, flush=True)\n"
            "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        server = int(parent.stdout.readline())  # type: ignore[union-attr]
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert gone(server)


def test_a_jobs_end_is_reported_when_it_ends_not_at_the_servers_next_look():
    # The server's loop alone (no training stack): a job of no known kind ends at once, with exit 1.
    # Its periodic look is set to 10 minutes: the report can only come from the child's end waking it.
    code = ("import socket, sys\n"
            "from tunegate.fullrun import fork_server\n"
            "fork_server.REAP_EVERY_S = 600\n"
            "fork_server.serve(socket.socket(fileno=int(sys.argv[1])))\n")
    ours, theirs = socket.socketpair()
    server = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    theirs.close()
    read, write = os.pipe()
    try:
        request = {"job": "1", "kind": "no-such-kind", "args": {}, "env": {}}
        socket.send_fds(ours, [json.dumps(request).encode() + b"\n"], [write])
        os.close(write)
        ours.settimeout(60)
        replies = _replies(ours, 2)
        assert set(replies[0]) == {"job", "pid"} and replies[1] == {"job": "1", "exit": 1}
        with os.fdopen(read) as output:  # the job's own output: its first line, then why it ended
            assert "unknown job kind 'no-such-kind'" in output.read()
    finally:
        ours.close()  # EOF: the server returns
        server.wait(60)


def _replies(sock: socket.socket, count: int) -> list[dict]:
    data = b""
    while data.count(b"\n") < count:
        got = sock.recv(1 << 16)
        assert got, data
        data += got
    return [json.loads(line) for line in data.splitlines()[:count]]


@pytest.mark.nightly  # ~7 s (the server's imports); tests/flows/test_sweep.py trains through it in `make test`
def test_a_forked_training_answers_as_the_cold_trainer_does(tmp_path: Path):
    server, env = ForkServer(), candidate_env(load_spec("good"), 1)
    assert server.start(env)
    try:
        result_path = tmp_path / "train_result.json"
        job = server.run("train", {"argv": ["--spec", str(tmp_path / "missing.yaml"), "--output-dir",
                                            str(tmp_path / "out"), "--result", str(result_path)]}, env)
        assert job is not None and job.pid != server._proc.pid
        lines: list[str] = []
        result = follow_launched(job, result_path, timeout_s=120, log=lines.append)
    finally:
        server.close()
    # what `python -m tunegate.fullrun.trainer` answers for a spec it cannot read (TG709), from the file
    assert result.status == "failed" and result.codes == ["TG709"], lines
    assert job.returncode == 1


@pytest.mark.nightly  # ~15 s: the mini-run twice, here and in a forked child
def test_a_forked_mini_run_reports_what_the_in_process_one_does():
    from tunegate.fullrun import forks, held_jobs
    from tunegate.gate import check
    from tunegate.spec.check import parse_spec
    from tunegate.sweep import mini_run_apart

    parsed = parse_spec(SPEC)
    static = check(parsed, only={"dataset", "estimate"})
    here = check(parsed, only={"mini-run"}, facts=static.facts.model_copy(deep=True))
    server = ForkServer()
    assert server.start(candidate_env(parsed.require(), 1))
    saved, forks.FORKS = forks.FORKS, server
    try:
        forked = mini_run_apart.mini_run_report(parsed, static.facts.model_copy(deep=True))
    finally:
        # The child waits, held for a training the sweep would decide on: ended here, so no later
        # test of this process finds the spec held (test_candidate_job's usage-error test did).
        held_jobs.release(parsed.path)
        forks.FORKS = saved
        server.close()
    stage = {r.name: r for r in forked.stages}["mini-run"]
    mine = {r.name: r for r in here.stages}["mini-run"]
    assert stage.status == mine.status and [f.code for f in stage.findings] == [f.code for f in mine.findings]
    assert stage.stats["losses"] == mine.stats["losses"]


@pytest.mark.slow  # ~15 s: the mini-run twice, here and in a fresh process
def test_a_mini_run_in_a_process_of_its_own_reports_what_the_in_process_one_does():
    # what a Dask or Ray worker does for a mini-run on a GPU: its CUDA state ends with the process (issue 31)
    from tunegate.gate import check
    from tunegate.spec.check import parse_spec
    from tunegate.sweep import mini_run_apart

    parsed = parse_spec(SPEC)
    static = check(parsed, only={"dataset", "estimate"})
    here = check(parsed, only={"mini-run"}, facts=static.facts.model_copy(deep=True))
    apart = mini_run_apart.mini_run_in_child(parsed, static.facts.model_copy(deep=True))
    stage = {r.name: r for r in apart.stages}["mini-run"]
    mine = {r.name: r for r in here.stages}["mini-run"]
    assert stage.status == mine.status and [f.code for f in stage.findings] == [f.code for f in mine.findings]
    assert stage.stats["losses"] == mine.stats["losses"]


def test_a_candidate_mini_run_that_will_use_a_gpu_gets_a_process_of_its_own(monkeypatch):
    from tunegate.spec.check import parse_spec
    from tunegate.sweep.mini_run_apart import will_use_a_gpu

    parsed = parse_spec(SPEC)
    assert not will_use_a_gpu(parsed)  # gate.mini_run.device: cpu
    spec = parsed.require()
    auto = parsed.model_copy(update={"spec": spec.model_copy(update={"gate": spec.gate.model_copy(update={
        "mini_run": spec.gate.mini_run.model_copy(update={"device": "auto"})})})})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not will_use_a_gpu(auto)  # auto on a worker without a GPU: here, in process
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # a worker given one GPU
    assert will_use_a_gpu(auto)


def test_a_mini_run_of_its_own_that_cannot_run_as_asked_raises_that_usage_error(tmp_path, monkeypatch):
    from tunegate.errors import UsageError
    from tunegate.facts import GateFacts
    from tunegate.spec.check import parse_spec
    from tunegate.sweep import mini_run_apart

    (tmp_path / "afile").write_text("not a folder")
    monkeypatch.setenv("TUNEGATE_CACHE", str(tmp_path / "afile"))
    with pytest.raises(UsageError, match=r"TUNEGATE_CACHE=.*afile is not a folder tunegate can use"):
        mini_run_apart.mini_run_in_child(parse_spec(SPEC), GateFacts())


def test_the_server_builds_the_checkpoint_conversion_table_its_children_would_each_build():
    said = _python("import transformers.conversion_mapping as table\n"
                   "from tunegate.fullrun.fork_server import _build_conversion_table\n"
                   "print(table._checkpoint_conversion_mapping_cache is None)\n"
                   "_build_conversion_table()\n"
                   "print(table._checkpoint_conversion_mapping_cache is not None)\n")
    assert said.splitlines() == ["True", "True"]  # not built on import; built by the server
