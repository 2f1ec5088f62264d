"""One tunegate command, run alternately in two variants: the CPU of its whole process tree, pair by pair.

    python benchmarks/paired_cpu.py --pairs 15 --against /work/wt-38c -- check --train T --validation V --json
    python benchmarks/paired_cpu.py --pairs 7 --workers 1,2 -- check --train T --validation V --json
    python benchmarks/paired_cpu.py --pairs 5 --against /work/wt-53c --module tunegate.fullrun.trainer -- \
        --spec examples/quickstart.yaml --output-dir /tmp/paired-trainer --max-steps 4 --no-checkpoints

The variants are this checkout against another (`--against`, each run from its own root, so
`python -m tunegate` is that checkout's), or two values of TUNEGATE_WORKERS in this checkout
(`--workers A,B`). Each pair runs both, the order alternating pair by pair; the CPU is user + sys of
the command and every process it waited for (`os.wait4`), the wall its whole run. A fixed saving of
a few tens of ms shows in the paired differences long before it shows in two medians on a shared
machine. Prints the medians, every paired difference, and the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(args: list[str], cwd: Path, workers: str | None, module: str = "tunegate") -> tuple[float, float]:
    """(CPU s of the whole tree, wall s) of `python -m MODULE ARGS` (tunegate's CLI by default) run from `cwd`."""
    env = dict(os.environ)
    if workers is not None:
        env["TUNEGATE_WORKERS"] = workers
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=11)
    ap.add_argument("--against", type=Path, help="another checkout: this one's command against that one's")
    ap.add_argument("--workers", help="A,B: TUNEGATE_WORKERS=A against =B, in this checkout")
    ap.add_argument("--module", default="tunegate", help="the module run as `python -m` (default: tunegate's CLI)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then tunegate's arguments")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if (args.against is None) == (args.workers is None) or not command:
        ap.error("give either --against DIR or --workers A,B, then -- and the command")
    if args.against is not None:
        variants = {"this checkout": (ROOT, None), str(args.against): (args.against.resolve(), None)}
    else:
        a, b = args.workers.split(",")
        variants = {f"TUNEGATE_WORKERS={a}": (ROOT, a), f"TUNEGATE_WORKERS={b}": (ROOT, b)}
    names = list(variants)
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for i in range(args.pairs):
        for name in names if i % 2 == 0 else names[::-1]:
            runs[name].append(run_once(command, *variants[name], module=args.module))
    for name in names:
        cpu, wall = [r[0] for r in runs[name]], [r[1] for r in runs[name]]
        print(f"{name}: CPU median {statistics.median(cpu):.3f} s (min {min(cpu):.3f}), "
              f"wall median {statistics.median(wall):.3f} s")
    diffs = sorted(x[0] - y[0] for x, y in zip(runs[names[0]], runs[names[1]]))
    print(f"paired CPU differences ({names[0]} - {names[1]}): " + " ".join(f"{d:+.3f}" for d in diffs)
          + f"; median {statistics.median(diffs):+.3f} s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
