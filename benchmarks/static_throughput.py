"""Static gate throughput: tunegate's dataset stage against the source's stdlib loop, same run.

    python benchmarks/static_throughput.py                 # 50 and 200 MB, 3 repeats
    python benchmarks/static_throughput.py --mb 20 --repeat 1   # a quick look

(a) tunegate: `validate_dataset` (strict orjson reader, the whole contract, stats, duplicate records
    and keys, findings); (b) baseline: what the source describes, `json.loads` on every non-empty
    line of a text-mode file and the same contract rules. Both read the same generated file
    (benchmarks/out/, gitignored; see benchmarks/chat_corpus.py). Prints the best-of-N times, the
    ratio tunegate/baseline (target <= 1.0), and the peak RSS of each in a fresh subprocess
    (target < 150 MB and flat as the file grows).
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from chat_corpus import write_corpus  # noqa: E402
from naive_contract import contract_problems  # noqa: E402


def baseline_check(path: Path) -> list[tuple[int, str]]:
    """The source's approach: a text-mode loop, json.loads per non-empty line, the contract rules."""
    problems: list[tuple[int, str]] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                problems.append((n, "invalid JSON"))
                continue
            problems.extend((n, p) for p in contract_problems(record))
    return problems


def tunegate_check(path: Path) -> int:
    from tunegate.dataset import validate_dataset

    result = validate_dataset({"train": path}, cap=20)
    return sum(result.totals_by_code.values())


def best_times(path: Path, repeat: int) -> dict[str, dict[str, float]]:
    """Best-of-`repeat` wall and CPU seconds of each checker, interleaved so that machine noise
    hits both alike (CPU time is the steadier figure on a shared machine)."""
    best = {name: {"wall": float("inf"), "cpu": float("inf"), "found": 0} for name in CHECKERS}
    for _ in range(repeat):
        for name, fn in CHECKERS.items():
            wall, cpu = time.perf_counter(), time.process_time()
            out = fn(path)
            best[name]["wall"] = min(best[name]["wall"], time.perf_counter() - wall)
            best[name]["cpu"] = min(best[name]["cpu"], time.process_time() - cpu)
            best[name]["found"] = out if isinstance(out, int) else len(out)
    return best


CHECKERS = {"tunegate": tunegate_check, "baseline": baseline_check}


def peak_rss_mb(which: str, path: Path) -> float:
    """Peak RSS of a fresh interpreter that imports the checker and runs it once on `path`."""
    out = subprocess.run([sys.executable, __file__, "--child", which, str(path)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def child(which: str, path: Path) -> None:
    if which == "tunegate":
        tunegate_check(path)
    elif which == "baseline":
        baseline_check(path)
    elif which == "imports":  # the floor: interpreter + tunegate's imports, no data read
        import tunegate.dataset.stage  # noqa: F401
    print(_peak_rss_kib() / 1024)


def _peak_rss_kib() -> float:
    # VmHWM belongs to this process image; ru_maxrss on Linux also carries the parent's peak
    # across fork+exec, which would charge the benchmark's own memory to the child.
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS


def main() -> None:
    ap = argparse.ArgumentParser(description="tunegate dataset stage vs the stdlib json.loads loop")
    ap.add_argument("--mb", default="50,200", help="file sizes in MB, comma-separated (default 50,200)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per checker; the best counts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "out", help="where generated files go (reused)")
    ap.add_argument("--broken", action="store_true",
                    help="also time files where every record breaks the contract (the slow path)")
    ap.add_argument("--child", nargs=2, metavar=("WHICH", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], Path(args.child[1]))
    print(f"python {sys.version.split()[0]}; floor RSS (interpreter + imports): "
          f"{peak_rss_mb('imports', Path('-')):.0f} MB")
    print(f"{'size':>6} {'records':>8} {'tunegate s':>10} {'baseline s':>10} {'ratio':>5} "
          f"{'cpu ratio':>9} {'MB/s':>5} {'RSS tg MB':>9} {'RSS base MB':>11} findings")
    kinds = (False, True) if args.broken else (False,)
    for mb, broken in ((float(x), b) for x in args.mb.split(",") for b in kinds):
        path = args.out / f"chat_{mb:g}mb_seed{args.seed}{'_broken' if broken else ''}.jsonl"
        if not path.exists():
            write_corpus(path, mb, args.seed, broken)
        records = sum(1 for _ in path.open("rb"))
        t = best_times(path, args.repeat)
        tg, base = t["tunegate"], t["baseline"]
        rss_tg, rss_base = peak_rss_mb("tunegate", path), peak_rss_mb("baseline", path)
        size_mb = path.stat().st_size / 1e6
        print(f"{size_mb:>4.0f}MB {records:>8} {tg['wall']:>10.3f} {base['wall']:>10.3f} "
              f"{tg['wall'] / base['wall']:>5.2f} {tg['cpu'] / base['cpu']:>9.2f} {size_mb / tg['wall']:>5.0f} "
              f"{rss_tg:>9.0f} {rss_base:>11.0f} {tg['found']:.0f} vs {base['found']:.0f}")


if __name__ == "__main__":
    main()
