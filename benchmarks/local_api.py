"""What the shared local API saves a flow command: a 1-candidate sweep and a preflight with Prefect's
API of the command's own (started and stopped by each command) against the user's shared one,
already up (tunegate.local_api.shared).

    python benchmarks/local_api.py --rounds 3

Every command runs as a fresh process (as a user runs it) on the quickstart data and the built-in
tiny model, one torch thread, on one Prefect home warmed first (migrations not counted), rounds
interleaved (own, shared; then shared, own):
  own-*      TUNEGATE_LOCAL_API_IDLE_S=0: the command starts its own uvicorn child and waits for it
             (tunegate's behaviour before issue 33); its CPU is in the command's (a reaped child);
             "+ server" there is what the idle shared server spent meanwhile;
  shared-*   the default: the shared server is up (started by first-*, as after a user's first
             command); the command's own CPU, and, apart, what the server spent while it ran
             (/proc/PID/stat), since the server is not the command's child;
  first-*    once, before the rounds: the command that finds no server and starts the shared one
             (a cold start: it waits as `own` does; the server's start-up CPU is shown apart).
It prints each run, the medians, the ratios own/shared, and the load average before and after, and
stops the shared server at the end.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out" / "local_api"
sys.path.insert(0, str(ROOT))
from tunegate.local_api.shared import stop_server  # noqa: E402  (this checkout's, not an installed one)
from tunegate.local_api.state import Place  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=OUT))
    shutil.copy(ROOT / "examples" / "quickstart.yaml", work)
    shutil.copytree(ROOT / "examples" / "data", work / "data")
    sweep = _sweep_spec(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_", "TUNEGATE_LOCAL_API"))}
    env.update(PREFECT_HOME=str(work / "prefect-home"), TUNEGATE_TORCH_THREADS="1", PYTHONPATH=str(ROOT),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", TUNEGATE_LOCAL_API_IDLE_S="600")
    place = Place(work / "prefect-home" / "tunegate")
    commands = {"sweep-1": ["sweep", str(sweep), "--json"],
                "preflight": ["preflight", str(work / "quickstart.yaml"), "--no-advisor", "--json"]}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    try:
        for argv in commands.values():  # warm-up: Prefect's home, the tiny model, bytecode
            _run(argv, work, {**env, "TUNEGATE_LOCAL_API_IDLE_S": "0"}, place)
        for name, argv in commands.items():
            _stop(place)
            wall, cpu, server = _run(argv, work, env, place)
            print(f"    first-{name:<10} {wall:6.2f} s wall {cpu:6.2f} s CPU (+ server {server:5.2f})  load {_load()}")
        runs = _rounds(args.rounds, commands, work, env, place)
    finally:
        _stop(place)
    _report(runs)
    print(f"load average after: {_load()}")


def _rounds(rounds: int, commands: dict[str, list[str]], work: Path, env: dict[str, str],
            place: Place) -> dict[str, list[tuple[float, float, float]]]:
    runs: dict[str, list[tuple[float, float, float]]] = {}
    for i in range(rounds):
        for name, argv in commands.items():
            order = ["own", "shared"] if i % 2 == 0 else ["shared", "own"]
            for kind in order:
                idle = "0" if kind == "own" else "600"
                wall, cpu, server = _run(argv, work, {**env, "TUNEGATE_LOCAL_API_IDLE_S": idle}, place)
                runs.setdefault(f"{kind}-{name}", []).append((wall, cpu, server))
                print(f"    {kind}-{name:<10} {wall:6.2f} s wall {cpu:6.2f} s CPU (+ server {server:5.2f})  "
                      f"load {_load()}", flush=True)
    return runs


def _run(argv: list[str], work: Path, env: dict[str, str], place: Place) -> tuple[float, float, float]:
    """(wall, CPU of the command and its reaped children, CPU the shared server spent meanwhile)."""
    record = place.read()
    before = _cpu_of(record.pid) if record else None
    used = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tunegate", *argv], cwd=work, env=env, capture_output=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[:2]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    record = place.read()  # the server this command used or started
    after = _cpu_of(record.pid) if record else None
    server = (after or 0.0) - (before or 0.0) if after is not None else 0.0
    return wall, _children_cpu() - used, server


def _report(runs: dict[str, list[tuple[float, float, float]]]) -> None:
    med = {k: tuple(statistics.median(r[i] for r in v) for i in range(3)) for k, v in runs.items()}
    print(f"medians of {len(next(iter(runs.values())))} round(s):")
    for name, (wall, cpu, server) in med.items():
        print(f"  {name:<18} {wall:6.2f} s wall {cpu:6.2f} s CPU (+ shared server {server:5.2f} s)")
    for name in ("sweep-1", "preflight"):
        own, shared = med[f"own-{name}"], med[f"shared-{name}"]
        print(f"  {name}: shared/own wall x{shared[0] / own[0]:.2f}, CPU x{shared[1] / own[1]:.2f} "
              f"(with the server's share x{(shared[1] + shared[2]) / own[1]:.2f})")


def _sweep_spec(work: Path) -> Path:
    text = (ROOT / "examples" / "sweep.yaml").read_text(encoding="utf-8")
    text = text.replace("data/train.jsonl", str(work / "data" / "train.jsonl"))
    text = text.replace("data/validation.jsonl", str(work / "data" / "validation.jsonl"))
    head, _, _ = text.partition("  candidates:")
    path = work / "sweep.yaml"
    path.write_text(head + "  candidates:\n" + '    - {"lora.r": 8, "lora.alpha": 16}\n', encoding="utf-8")
    return path


def _stop(place: Place) -> None:
    record = place.read()
    if record is not None:
        stop_server(place, record)


def _cpu_of(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
