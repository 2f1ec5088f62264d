"""What a 1-candidate `tunegate sweep` waits on, in order: wall-clock marks on its steps.

    python benchmarks/sweep_path.py            # one sweep of the tiny model, as sweep_overhead.py runs it
    python benchmarks/sweep_path.py --busy     # also the machine's busy (and I/O-waiting) cores every 0.5 s

The sweep runs as `tunegate sweep SPEC --json` in a fresh process whose functions on the path are
wrapped to note when they started and how long they took (seconds since that process started):
the local API's start and health check, the fork server, the flow, the static gate, MLflow's store
and parent run, Prefect's tag-concurrency slot, the candidate's gate, mini-run and short training
(forked), its MLflow run and artifacts, and the closing steps. Only wrappers: the code, the order
and the verdicts are the command's own. --busy samples /proc/stat (every user's processes: on a
shared machine a step that waits on CPU shows the cores full, a step that sleeps shows them idle).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# (module, attribute, label): what is wrapped; a module that imports Prefect is wrapped only once
# the command has imported Prefect itself (its local API must start before that import).
BEFORE_PREFECT = [
    ("tunegate.local_api.child", "LocalApi.__init__", "local API: uvicorn started"),
    ("tunegate.local_api.child", "LocalApi.wait_ready", "local API: waiting for its health check"),
    ("tunegate.local_api.child", "LocalApi.stop", "local API: stopped"),
    ("tunegate.fullrun.forks", "ForkServer.run", "fork server: job forked (after its imports)"),
    ("tunegate.cli.flow_runner", "run_flow", "the flow, start to end"),
    ("tunegate.tracking.session", "open_session", "MLflow: store (template) and parent run"),
    ("tunegate.tracking.session", "close_session", "MLflow: parent run closed"),
    ("tunegate.gate", "check", "gate.check (static gate, candidate's estimate)"),
    ("tunegate.sweep.evaluate", "evaluate_candidate", "candidate: evaluated"),
    ("tunegate.sweep.mini_run_apart", "mini_run_report", "candidate: mini-run (forked child)"),
    ("tunegate.sweep.evaluate", "_train", "candidate: short training (forked child)"),
    ("tunegate.sweep.evaluate", "_log", "candidate: its MLflow run"),
    ("tunegate.tracking.candidate_log", "_log_artifacts", "candidate: its MLflow artifacts (charts)"),
    ("tunegate.tracking.parent_charts", "chart_candidates", "closing: the parent's charts"),
]
AFTER_PREFECT = [
    ("prefect.concurrency._sync", "acquire_concurrency_slots_with_lease", "Prefect: tag-concurrency slot"),
    ("tunegate.tasks.report_tasks", "create_markdown_artifact", "Prefect: markdown artifact"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", action="store_true", help="also the machine's busy and I/O-waiting cores every 0.5 s")
    ap.add_argument("--steps", type=int, default=12, help="sweep.train_steps")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    from benchmarks.sweep_overhead import ENV, OUT, _load, sweep_spec

    OUT.mkdir(parents=True, exist_ok=True)
    marks = Path(tempfile.mkdtemp(dir=OUT)) / "marks.txt"
    env = {**ENV, "SWEEP_PATH_MARKS": str(marks)}
    start = time.time()
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(sweep_spec(1, args.steps))], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    busy = _sample(proc) if args.busy else []
    proc.wait()
    print(f"exit {proc.returncode}, {time.time() - start:.1f} s wall, load {_load()}")
    for line in sorted(marks.read_text().splitlines(), key=lambda s: float(s.split()[0])):
        print(f"  +{line}")
    for t, cores, io in busy:
        print(f"  {t:5.1f} s  machine busy {cores:4.2f} cores, waiting on I/O {io:4.2f}")


def _sample(proc: subprocess.Popen) -> list[tuple[float, float, float]]:
    """(seconds since start, cores busy, cores waiting on I/O) every 0.5 s until `proc` ends."""
    def stat() -> tuple[int, int, int]:
        fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(fields), fields[3], fields[4]  # all, idle, iowait

    start, rows, last, cores = time.time(), [], stat(), os.cpu_count() or 1
    while proc.poll() is None:
        time.sleep(0.5)
        now = stat()
        spent = max(1, now[0] - last[0])
        idle, io = now[1] - last[1], now[2] - last[2]
        rows.append((time.time() - start, (spent - idle - io) / spent * cores, io / spent * cores))
        last = now
    return rows


def child(spec: str) -> None:
    """Run `tunegate sweep SPEC --json` here, with the steps wrapped."""
    import importlib

    import tunegate.local_api as local_api

    for entry in BEFORE_PREFECT:
        _wrap(importlib.import_module(entry[0]), *entry[1:])
    adopt = local_api.adopt_or_stop

    def adopt_then_wrap(api):  # Prefect is imported by now
        kept = adopt(api)
        for entry in AFTER_PREFECT:
            _wrap(importlib.import_module(entry[0]), *entry[1:])
        return kept

    local_api.adopt_or_stop = adopt_then_wrap
    sys.argv = ["tunegate", "sweep", spec, "--json"]  # the command's own exit (no interpreter teardown)
    from tunegate.cli.main import main as tunegate_main

    sys.exit(tunegate_main())


def _wrap(module, dotted: str, label: str) -> None:
    import functools
    import threading

    owner, _, name = dotted.rpartition(".")
    holder = getattr(module, owner) if owner else module
    fn = getattr(holder, name)

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        began = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            ended = time.time()
            with open(os.environ["SWEEP_PATH_MARKS"], "a", encoding="utf-8") as out:
                out.write(f"{began - _STARTED:6.2f} s  {label:<48} {ended - began:6.2f} s  "
                          f"[{threading.current_thread().name}]\n")

    setattr(holder, name, timed)


def _process_start() -> float:
    """This process's start, as a time.time() value (from /proc: clock ticks since boot)."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


_STARTED = _process_start()

if __name__ == "__main__":
    main()
