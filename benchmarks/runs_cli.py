"""`tunegate runs` as a user runs it, against another checkout, paired (benchmarks/paired_cpu.py).

    python benchmarks/runs_cli.py --pairs 7 --against /tmp/old   # /tmp/old: another checkout, bytecode built

One 3-candidate sweep of the tiny model (benchmarks/sweep_overhead.py's spec) makes an MLflow store
with a parent run and three candidates; then `paired_cpu.py` runs `tunegate runs --spec sweep.yaml
--json` from each checkout, alternating pair by pair, and prints the CPU and wall medians and every
paired CPU difference; last, each checkout lists the runs once more, and whether both listed the same
runs is printed. The command is MLflow's import, the store's open and a listing: what every
`tunegate runs` pays before it prints.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bytecode import compile_trees
from sweep_overhead import ENV, sweep_spec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--against", type=Path, required=True, help="the other checkout")
    args = ap.parse_args()
    other = args.against.resolve()
    compile_trees([ROOT, other])
    spec = sweep_spec(3, 12)
    made = subprocess.run([sys.executable, "-m", "tunegate", "sweep", str(spec), "--json"], cwd=spec.parent,
                          env={**ENV, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"the sweep that makes the store failed:\n{made.stderr[-3000:]}")
    command = ["runs", "--spec", str(spec), "--json"]
    subprocess.run([sys.executable, str(HERE / "paired_cpu.py"), "--pairs", str(args.pairs), "--against", str(other),
                    "--", *command], check=True)
    listed = {source: _run_ids(source, command) for source in (ROOT, other)}
    print(f"the same runs listed by both: {listed[ROOT] == listed[other]} ({len(listed[ROOT])} runs)")


def _run_ids(source: Path, command: list[str]) -> list[str]:
    """The runs `source`'s tunegate lists, by id (run from its own root, as paired_cpu runs it)."""
    done = subprocess.run([sys.executable, "-m", "tunegate", *command], cwd=source, capture_output=True, text=True,
                          check=True)
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

    walk(json.loads(done.stdout))
    return sorted(found)


if __name__ == "__main__":
    main()
