"""What a user waits for: whole `tunegate check` commands, and what drawing progress costs.

    python benchmarks/cli_experience.py                # 5 repeats, a 50 MB corpus for the progress pair
    python benchmarks/cli_experience.py --repeat 3 --mb 20

(a) Whole commands, each a fresh process as a user runs it: `check examples/quickstart.yaml`
    (approved; the overlap stage imports datasketch and scipy), `check examples/broken.yaml`
    (rejected at the spec stage), against the baseline of the same run: `python -c pass`, the
    interpreter alone. (b) Progress: `check --train BIG --validation VAL` with stderr on a
    pseudo-terminal (the board drawn ten times a second, TUNEGATE_PROGRESS_DELAY_S=0) against
    the same command with stderr on a pipe (no progress), interleaved; the ratio is the cost of
    the board (target <= 1.05).
"""
from __future__ import annotations

import argparse
import os
import pty
import resource
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from chat_corpus import write_corpus  # noqa: E402

PY = sys.executable


def timed(cmd: list[str], tty: bool = False, env: dict[str, str] | None = None) -> float:
    """Wall seconds of one run; stderr on a pty when `tty`, drained as a terminal would."""
    return timed_cpu(cmd, tty, env)[0]


def timed_cpu(cmd: list[str], tty: bool = False, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the child: user + system) of one run. CPU time barely moves with the load
    other jobs put on the machine, so it is the fairer figure for what drawing progress costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = _run(cmd, tty, {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _run(cmd: list[str], tty: bool, env: dict[str, str]) -> float:
    start = time.perf_counter()
    if not tty:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        return _verdict_or_die(cmd, code, time.perf_counter() - start)
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break
        elif proc.poll() is not None:
            break
    code = proc.wait()
    os.close(master)
    return _verdict_or_die(cmd, code, time.perf_counter() - start)


def _verdict_or_die(cmd: list[str], code: int, seconds: float) -> float:
    """A command that could not run (exit 2 or 3: a missing module, a usage error) has no time worth
    reporting: a crash in 0.3 s once passed here for a 20 MB check."""
    if code not in (0, 1):
        sys.exit(f"`{' '.join(cmd[1:])}` exited {code}: fix that before timing it")
    return seconds


def whole_commands(repeat: int) -> None:
    cases = {"python -c pass (baseline)": [PY, "-c", "pass"],
             "tunegate check examples/broken.yaml": [PY, "-m", "tunegate", "check", "examples/broken.yaml"],
             "tunegate check examples/quickstart.yaml": [PY, "-m", "tunegate", "check", "examples/quickstart.yaml"]}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, cmd in cases.items():
            times[name].append(timed(cmd))
    base = min(times["python -c pass (baseline)"])
    print(f"\n{'command':<42}{'best s':>8}{'median s':>10}{'best - baseline':>17}")
    for name, ts in times.items():
        print(f"{name:<42}{min(ts):>8.2f}{statistics.median(ts):>10.2f}{min(ts) - base:>17.2f}")


def progress_cost(repeat: int, mb: int) -> None:
    out = HERE / "out" / "experience"
    out.mkdir(parents=True, exist_ok=True)
    train, val = out / f"train-{mb}mb.jsonl", out / "validation-2mb.jsonl"
    if not train.exists():
        write_corpus(train, mb, seed=1)
    if not val.exists():
        write_corpus(val, 2, seed=2)
    cmd = [PY, "-m", "tunegate", "check", "--train", str(train), "--validation", str(val)]
    env = {"TUNEGATE_PROGRESS_DELAY_S": "0"}
    drawn, plain = [], []
    for _ in range(repeat):
        drawn.append(timed_cpu(cmd, tty=True, env=env))
        plain.append(timed_cpu(cmd, env=env))
    print(f"\n{mb} MB train + 2 MB validation, `check --train --validation`, best of {repeat}:")
    for i, what in ((0, "wall"), (1, "CPU ")):
        d, p = min(r[i] for r in drawn), min(r[i] for r in plain)
        print(f"  {what}: progress drawn (stderr a pty) {d:.2f} s   no progress (stderr a pipe) {p:.2f} s"
              f"   ratio {d / p:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mb", type=int, default=50)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    whole_commands(args.repeat)
    progress_cost(args.repeat, args.mb)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
