"""How long the local Prefect API takes to answer on a fresh Prefect home, against another checkout.

    python benchmarks/local_api_start.py --rounds 3 --against /tmp/old   # /tmp/old: a worktree + build_ext

Each round starts, in alternating order, one local API from this checkout and one from --against
(PYTHONPATH), each on a new, empty Prefect home, as a command's first use of that home does:
`start_local_api()` then `wait_ready()` (tunegate.local_api), in a fresh process, with the idle time
a user's shared server has. It prints the seconds until the health check answered, the server's CPU
seconds so far (/proc/PID/stat) and the medians, then stops the server. Both are warmed first, so
each checkout has kept its database template (tunegate.local_api.db_template) and every timed start
is on a copy of it, as every fresh home after a machine's first is.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_trees

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out" / "local_api_start"
START = ("import time; t = time.perf_counter()\n"
         "from tunegate.local_api import start_local_api\n"
         "api = start_local_api(); api.wait_ready(); print(api.pid, time.perf_counter() - t)\n")


def start_once(source: Path) -> tuple[float, float]:
    """(seconds until the health check answered, the server's CPU seconds by then) on a new home."""
    with tempfile.TemporaryDirectory(dir=OUT) as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(PREFECT_HOME=str(Path(scratch) / "home"), PYTHONPATH=str(source),
                   TUNEGATE_LOCAL_API_IDLE_S="600", PREFECT_SERVER_ANALYTICS_ENABLED="false")
        done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True, text=True,
                              cwd=source, check=True)
        pid, ready = done.stdout.split()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        os.kill(int(pid), signal.SIGTERM)
        time.sleep(1)  # its files closed before the home goes
        return float(ready), cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", type=Path, required=True, help="the other checkout (its tunegate on PYTHONPATH)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sources = {"this": ROOT, "other": args.against.resolve()}
    compile_trees(list(sources.values()))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    for source in sources.values():  # warm-up: each keeps its template
        start_once(source)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sources}
    for i in range(args.rounds):
        for name in (list(sources) if i % 2 == 0 else list(reversed(sources))):
            ready, cpu = start_once(sources[name])
            runs[name].append((ready, cpu))
            print(f"    {name:6} answered after {ready:5.2f} s, server CPU {cpu:5.2f} s")
    for name, got in runs.items():
        print(f"  {name:6} median {statistics.median(r for r, _ in got):5.2f} s, "
              f"CPU {statistics.median(c for _, c in got):5.2f} s  ({sources[name]})")
    print(f"load average after: {_load()}")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
