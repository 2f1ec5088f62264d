"""`tunegate runs` as a user runs it, against another checkout, paired.

    python benchmarks/runs_cli.py --rounds 5 --against /tmp/old   # /tmp/old: another checkout, bytecode built

One 3-candidate sweep of the tiny model (benchmarks/sweep_overhead.py's spec) makes an MLflow store
with a parent run and three candidates; then each round runs `python -m tunegate runs --spec
sweep.yaml --json` once from this checkout and once from --against (PYTHONPATH), in alternating
order, and prints each run's wall and CPU (user + sys of the command), the medians, their ratio, and
whether both listed the same runs. The command is MLflow's import, the store's open and a listing:
what every `tunegate runs` pays before it prints.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bytecode import compile_trees
from sweep_overhead import ENV, sweep_spec

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", type=Path, required=True, help="the other checkout (its tunegate on PYTHONPATH)")
    args = ap.parse_args()
    sources = {"this": ROOT, "other": args.against.resolve()}
    compile_trees(list(sources.values()))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    spec = sweep_spec(3, 12)
    made = subprocess.run([sys.executable, "-m", "tunegate", "sweep", str(spec), "--json"], cwd=spec.parent,
                          env={**ENV, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"the sweep that makes the store failed:\n{made.stderr[-3000:]}")
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sources}
    listed: dict[str, set[str]] = {name: set() for name in sources}
    for source in sources.values():  # warm-up: the page cache, each checkout's first read of the store
        _run(source, spec)
    for i in range(args.rounds):
        for name in (sources if i % 2 == 0 else list(reversed(sources))):
            wall, cpu, ids = _run(sources[name], spec)
            runs[name].append((wall, cpu))
            listed[name].add(ids)
            print(f"    {name:<6} {wall:6.2f} s wall {cpu:6.2f} s CPU  load {_load()}", flush=True)
    medians = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
               for name, r in runs.items()}
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<6} median {wall:6.2f} s wall {cpu:6.2f} s CPU  ({sources[name]})")
    print(f"  this / other: {medians['this'][0] / medians['other'][0]:.2f}x wall, "
          f"{medians['this'][1] / medians['other'][1]:.2f}x CPU; the same runs listed: "
          f"{listed['this'] == listed['other'] and len(listed['this']) == 1}")
    print(f"load average after: {_load()}")


def _run(source: Path, spec: Path) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tunegate", "runs", "--spec", str(spec), "--json"], cwd=spec.parent,
                          env={**ENV, "PYTHONPATH": str(source)}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{source}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), _run_ids(done.stdout)


def _run_ids(text: str) -> str:
    """The listed runs' ids, sorted: what both checkouts must agree on."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("run_id"), str):
                found.append(value["run_id"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(text))
    return ",".join(sorted(found))


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
