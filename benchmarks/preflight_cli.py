"""`tunegate preflight` of the quickstart spec as a user runs it, against another checkout, paired.

    python benchmarks/preflight_cli.py --rounds 3 --against /tmp/old   # /tmp/old: `git archive` + build_ext
    python benchmarks/preflight_cli.py --rounds 3 --against /tmp/old --cold   # each on a fresh Prefect home

Each round runs `python -m tunegate preflight quickstart.yaml --no-advisor --json` (the whole gate
as the `preflight` Prefect flow: spec, dataset, overlap, estimate, the mini-run on the built-in tiny
model, MLflow tracking, Prefect's local API started and stopped) once from this checkout and once
from --against (PYTHONPATH), in alternating order, on a copy of examples/quickstart.yaml and its data
in a scratch folder (preflight writes its report beside the spec), one torch thread. MLflow's store
is shared by both; each checkout has its own Prefect home (its own warm local API, as one install
has); both are warmed first, so first-use migrations are not counted. It
prints each run's wall and CPU (user + sys of the command and its children), the medians, the
ratio, and whether both reached the same verdict and findings. With --cold every run gets a fresh
Prefect home and the command's own local API (TUNEGATE_LOCAL_API_IDLE_S=0), as a user's first
command on a new home: the API's start-up and Prefect's migrations of the fresh database (or the copy
of the one a first start kept, tunegate.local_api.db_template) count in the command's CPU; the
warm-up makes that first start for each checkout.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_trees

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out" / "preflight"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", type=Path, required=True, help="the other checkout (its tunegate on PYTHONPATH)")
    ap.add_argument("--cold", action="store_true", help="every run on a fresh Prefect home, with its own local API")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=OUT))
    shutil.copy(ROOT / "examples" / "quickstart.yaml", work)
    shutil.copytree(ROOT / "examples" / "data", work / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(MLFLOW_TRACKING_URI=f"sqlite:///{work / 'mlflow.db'}", TUNEGATE_TORCH_THREADS="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    sources = {"this": ROOT, "other": args.against.resolve()}
    compile_trees(list(sources.values()))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    if args.cold:
        env["TUNEGATE_LOCAL_API_IDLE_S"] = "0"
    for source in sources.values():  # warm-up
        _run(source, work, env, args.cold)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sources}
    verdicts: dict[str, set[str]] = {name: set() for name in sources}
    for i in range(args.rounds):
        order = list(sources) if i % 2 == 0 else list(reversed(sources))
        for name in order:
            wall, cpu, verdict = _run(sources[name], work, env, args.cold)
            runs[name].append((wall, cpu))
            verdicts[name].add(verdict)
            print(f"    {name:<6} {wall:6.2f} s wall {cpu:6.2f} s CPU  {verdict}  load {_load()}", flush=True)
    medians = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
               for name, r in runs.items()}
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<6} median {wall:6.2f} s wall {cpu:6.2f} s CPU  ({sources[name]})")
    same = verdicts["this"] == verdicts["other"]
    print(f"  this / other: {medians['this'][0] / medians['other'][0]:.2f}x wall, "
          f"{medians['this'][1] / medians['other'][1]:.2f}x CPU; same verdicts: {same}")
    print(f"load average after: {_load()}")


def _run(source: Path, work: Path, env: dict[str, str], cold: bool = False) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "tunegate", "preflight", "quickstart.yaml", "--no-advisor", "--json"]
    # Each checkout its own Prefect home, so each keeps its own warm local API as one install does (the
    # two checkouts' servers differ by their code: on one home each command would replace the other's).
    home = work / ("prefect-home" if source == ROOT else "prefect-home-other")
    if cold:
        home = Path(tempfile.mkdtemp(prefix="cold-home-", dir=work))
    done = subprocess.run(command, cwd=work, env={**env, "PYTHONPATH": str(source), "PREFECT_HOME": str(home)},
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{source}: exit {done.returncode}\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    codes = ",".join(sorted(f["code"] for f in report["findings"]))
    return wall, cpu, f"approved={report['approved_for_full_run']} findings={codes}"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
