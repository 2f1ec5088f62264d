"""The whole `tunegate sweep` for 1, 2 and 4 candidates on threads, Dask and Ray, against a bare loop
of the same LoRA steps measured in the same run, and what the orchestration costs per candidate.

    python benchmarks/sweep_scale.py                                  # 1, 2, 4 x threads, dask, ray
    python benchmarks/sweep_scale.py --counts 1 4 --runners threads dask --steps 4

Every command runs as a fresh process, as a user runs it, on the built-in tiny model and the
quickstart data (examples/sweep.yaml), CPU, one torch thread per candidate:
  bare      one candidate's work without tunegate: a fresh process imports torch/transformers/peft,
            loads the model, adds LoRA, runs the mini-run's 4 steps + `--steps` optimizer steps
            and scores the validation set (benchmarks/sweep_overhead.py's loop);
  R-n       `tunegate sweep --json` with n candidates (all approved) on task runner R, at most
            min(n, cores) at a time (sweep.max_parallel), a fresh MLflow store each.
Printed per sweep: wall time, its ratio to the bare loop, and the orchestration cost per candidate:
(sweep wall - the candidates' own training on the wall) / n, where their training on the wall is
n x bare / max_parallel (as if the parallel candidates shared the cores perfectly). It holds what a
candidate costs beyond its training: Prefect's API and flow runs, the static and candidate gates,
the cluster's start, the workers' imports, MLflow, the trainer process started per candidate.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

import yaml
from sweep_overhead import BARE, OUT, ROOT, timed  # the same bare loop and fresh-process timer

CANDIDATES = [{"lora.r": 8, "lora.alpha": 16, "training.learning_rate": 3e-4},
              {"lora.r": 16, "lora.alpha": 32, "training.learning_rate": 1e-3},
              {"lora.r": 4, "lora.alpha": 8, "training.learning_rate": 5e-4},
              {"lora.r": 8, "lora.alpha": 16, "training.learning_rate": 1e-3}]
MINI_RUN_STEPS = 4  # examples/sweep.yaml's mini-run (the default gate.mini_run.steps)


def scale_spec(count: int, runner: str, steps: int, parallel: int) -> Path:
    """examples/sweep.yaml with `count` candidates on `runner`, in a fresh folder (its own MLflow store)."""
    spec = yaml.safe_load((ROOT / "examples" / "sweep.yaml").read_text(encoding="utf-8"))
    data = ROOT / "examples" / "data"
    spec["data"].update(train=str(data / "train.jsonl"), validation=str(data / "validation.jsonl"))
    spec["gate"] = {"mini_run": {"device": "cpu", "steps": MINI_RUN_STEPS}}
    spec["sweep"].update(train_steps=steps, candidates=CANDIDATES[:count], task_runner=runner,
                         max_parallel=parallel)
    folder = Path(tempfile.mkdtemp(prefix=f"scale-{runner}{count}-", dir=OUT))
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def available(runners: list[str]) -> list[str]:
    """The runners installed here (dask and ray are extras); the others are named and skipped."""
    needs = {"dask": "prefect_dask", "ray": "prefect_ray"}
    kept = [r for r in runners if r not in needs or importlib.util.find_spec(needs[r])]
    for r in set(runners) - set(kept):
        print(f"  skipped {r}: pip install 'tunegate[{r}]'")
    return kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4], help="candidates per sweep")
    ap.add_argument("--runners", nargs="+", default=["threads", "dask", "ray"], choices=["threads", "dask", "ray"])
    ap.add_argument("--steps", type=int, default=4, help="sweep.train_steps of each candidate")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    py, cores = sys.executable, os.cpu_count() or 1
    data = ROOT / "examples" / "data"
    print(f"python {sys.version.split()[0]}, {cores} CPUs, load average {os.getloadavg()[0]:.1f}")
    timed([py, "-m", "tunegate", "sweep", str(scale_spec(1, "threads", args.steps, 1)), "--json"])  # warm-up
    bare, _, _ = timed([py, "-c", BARE, str(data / "train.jsonl"), str(data / "validation.jsonl"),
                        str(MINI_RUN_STEPS + args.steps)])
    print(f"  bare loop: {bare:.1f} s wall ({MINI_RUN_STEPS} + {args.steps} LoRA steps, one evaluation)")
    print(f"  {'sweep':<10} {'wall s':>7} {'x bare':>7} {'orchestration s/candidate':>26}")
    runners = available(args.runners)
    for n in args.counts:  # count by count, so a cut-short run still compares the runners
        for runner in runners:
            parallel = min(n, cores)
            wall, _, out = timed([py, "-m", "tunegate", "sweep", str(scale_spec(n, runner, args.steps, parallel)),
                                  "--json"])
            approved = sum(o["approved"] for o in json.loads(out)["outcomes"])
            per = (wall - n * bare / parallel) / n
            note = "" if approved == n else f"   only {approved} of {n} approved: not comparable"
            print(f"  {runner + '-' + str(n):<10} {wall:7.1f} {wall / bare:7.2f} {per:26.1f}{note}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
