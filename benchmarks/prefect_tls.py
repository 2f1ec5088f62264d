"""The TLS contexts a 1-candidate sweep builds, and their CPU, in this checkout and another.

    python benchmarks/prefect_tls.py --rounds 3 --against /tmp/old

Prefect builds a TLS context for every API client it makes, from a CA bundle of 100+ roots, even
for the plain-http local API (tunegate.local_api.tls_bundle). Each round runs `tunegate sweep
--json` with one candidate from each checkout, as sweep_overhead.py does (its spec, its Prefect
homes, the tiny model, one torch thread), with a `sitecustomize` that wraps
`ssl.create_default_context` and adds up, per process, the contexts made and the CPU of the thread
that made them (`time.thread_time`: a context is built on one thread, whatever the others do
meanwhile), a line per context, written as it is made.
It prints each run's count and milliseconds and the median per checkout, with the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from sweep_overhead import ENV, OUT, prefect_home, sweep_spec

ROOT = Path(__file__).resolve().parent.parent
HOOK = '''
import os, ssl, time
_real = ssl.create_default_context
def _counted(*args, **kwargs):
    start = time.thread_time()
    try:
        return _real(*args, **kwargs)
    finally:  # written at once: a command may end without running atexit (tunegate.cli.fast_exit)
        with open(os.environ["TLS_REPORT"], "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} 1 {(time.thread_time() - start) * 1000:.2f}\\n")
ssl.create_default_context = _counted
'''


def one_sweep(source: Path, hook: Path, report: Path) -> tuple[int, float]:
    report.unlink(missing_ok=True)
    env = {**ENV, "PYTHONPATH": f"{source}{os.pathsep}{hook}", "PREFECT_HOME": str(prefect_home(source)),
           "TLS_REPORT": str(report)}
    subprocess.run([sys.executable, "-m", "tunegate", "sweep", str(sweep_spec(1, 12)), "--json"], cwd=source, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    rows = [line.split() for line in report.read_text(encoding="utf-8").splitlines()] if report.exists() else []
    return sum(int(r[1]) for r in rows), sum(float(r[2]) for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another checkout, run in the same rounds")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sources = [("this", ROOT)] + ([("old", args.against.resolve())] if args.against else [])
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp)
        (hook / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
        for _, source in sources:  # warm-up: each checkout's local API started once
            one_sweep(source, hook, hook / "report")
        made: dict[str, list[tuple[int, float]]] = {name: [] for name, _ in sources}
        for i in range(args.rounds):
            for name, source in sources if i % 2 == 0 else sources[::-1]:
                count, ms = one_sweep(source, hook, hook / "report")
                made[name].append((count, ms))
                print(f"  {name:5s} {count} TLS contexts, {ms:6.1f} ms of CPU", flush=True)
    for name, runs in made.items():
        print(f"median {name:5s} {statistics.median(c for c, _ in runs):.0f} contexts, "
              f"{statistics.median(ms for _, ms in runs):.1f} ms")
    print(f"load average after {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
