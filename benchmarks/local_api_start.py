"""How long the local Prefect API takes to answer on a fresh Prefect home, against another checkout.

    python benchmarks/local_api_start.py --rounds 3 --against /tmp/old   # /tmp/old: a worktree + build_ext
    python benchmarks/local_api_start.py --rounds 3 --against /tmp/old --existing   # a restart on a used home

Each round starts, in alternating order, one local API from this checkout and one from --against
(PYTHONPATH), each on a new, empty Prefect home, as a command's first use of that home does:
`start_local_api()` then `wait_ready()` (tunegate.local_api), in a fresh process, with the idle time
a user's shared server has. It prints the seconds until the health check answered, the server's CPU
seconds so far (/proc/PID/stat) and the medians, then stops the server. Both are warmed first, so
each checkout has kept its database template (tunegate.local_api.db_template) and every timed start
is on a copy of it, as every fresh home after a machine's first is. With --existing every start is
on one home per checkout that its warm-up started a server on (the database there, and whatever that
checkout noted beside it): the shared API's restart once it stopped after idling, a user's first
command after a break.
"""
from __future__ import annotations

import argparse
import os
import shutil
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


def start_once(source: Path, home: Path | None = None) -> tuple[float, float]:
    """(seconds until the health check answered, the server's CPU seconds by then) on `home`, else a new one."""
    with tempfile.TemporaryDirectory(dir=OUT) as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(PREFECT_HOME=str(home or Path(scratch) / "home"), PYTHONPATH=str(source),
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
    ap.add_argument("--existing", action="store_true", help="every start on a home used before (one per checkout)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sources = {"this": ROOT, "other": args.against.resolve()}
    compile_trees(list(sources.values()))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    homes: dict[str, Path | None] = {name: None for name in sources}
    if args.existing:  # one used home per checkout, for this run only
        scratch = Path(tempfile.mkdtemp(dir=OUT))
        homes = {name: scratch / f"home-{name}" for name in sources}
    for name, source in sources.items():  # warm-up: each keeps its template (and starts on its home)
        start_once(source, homes[name])
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sources}
    for i in range(args.rounds):
        for name in (list(sources) if i % 2 == 0 else list(reversed(sources))):
            ready, cpu = start_once(sources[name], homes[name])
            runs[name].append((ready, cpu))
            print(f"    {name:6} answered after {ready:5.2f} s, server CPU {cpu:5.2f} s")
    for name, got in runs.items():
        print(f"  {name:6} median {statistics.median(r for r, _ in got):5.2f} s, "
              f"CPU {statistics.median(c for _, c in got):5.2f} s  ({sources[name]})")
    print(f"load average after: {_load()}")
    if args.existing:
        shutil.rmtree(scratch, ignore_errors=True)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
