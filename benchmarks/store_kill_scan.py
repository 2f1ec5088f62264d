"""Kill a fresh MLflow store's creation at every n-th SQL statement; MLflow's own creation is the baseline.

    python benchmarks/store_kill_scan.py               # every 25th statement (~70 points each)
    python benchmarks/store_kill_scan.py --every 1     # every statement (~1,700 points, hours)
    python benchmarks/store_kill_scan.py --times-only --repeat 5

(a) baseline: the store created as tunegate used to create it, by MLflow's first open of a fresh
    `sqlite:///mlflow.db`; (b) tunegate: `ensure_store` (built aside, renamed into place). Each
    point: a forked child is SIGKILLed just before statement k (tests/support/store_kill.py),
    then the path is read with sqlite3 and a rerun (`ensure_store` + a logged run) is tried.
    Prints, per creator, how many points left no store, a complete one, or a broken one (and how
    many of those the rerun could not use), and the time of an uninterrupted creation, best of 3,
    interleaved (target: tunegate's ratio to the baseline <= 1.1).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.store_kill import create_store, store_state  # noqa: E402


def rerun_works(path: Path) -> bool:
    from tunegate.tracking.store import ensure_store, open_client, sqlite_uri

    try:
        ensure_store(sqlite_uri(path))
        client = open_client(sqlite_uri(path))
        client.create_run("0")
        return True
    except Exception:
        return False


def scan(folder: Path, every: int, mlflow_alone: bool) -> Counter[str]:
    from tunegate.tracking.store import sqlite_uri

    total = create_store(sqlite_uri(folder / "whole" / "mlflow.db"), None, folder / "count", mlflow_alone)
    outcomes: Counter[str] = Counter()
    for k in range(1, total + 1, every):
        path = folder / f"k{k}" / "mlflow.db"
        os.environ["TUNEGATE_CACHE"] = str(folder / f"cache-k{k}")  # no template: every point migrates
        create_store(sqlite_uri(path), k, mlflow_alone=mlflow_alone)
        state = store_state(path)
        kind = state if state in ("absent", "complete") else "broken"
        if not rerun_works(path):
            kind += ", rerun fails"
        outcomes[kind] += 1
        shutil.rmtree(path.parent)
    outcomes["statements"] = total
    return outcomes


def creation_times(folder: Path, repeat: int) -> dict[str, float]:
    from tunegate.tracking.store import sqlite_uri

    best = {"baseline": float("inf"), "tunegate": float("inf"), "template": float("inf")}
    for i in range(repeat):
        for name in best:
            # "tunegate" migrates (an empty cache), "template" copies the migrated store the cache keeps
            os.environ["TUNEGATE_CACHE"] = str(folder / ("cache" if name == "template" else f"cache-{i}"))
            start = time.perf_counter()
            create_store(sqlite_uri(folder / f"t-{name}-{i}" / "mlflow.db"), None, mlflow_alone=name == "baseline")
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--times-only", action="store_true", help="time the creations, scan nothing")
    args = parser.parse_args()
    import mlflow  # noqa: F401  (imported once, before the children fork)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        times = creation_times(folder, args.repeat)
        print(f"uninterrupted creation, best of {args.repeat}: baseline {times['baseline']:.2f} s, "
              f"tunegate {times['tunegate']:.2f} s, ratio {times['tunegate'] / times['baseline']:.2f}; "
              f"from the cached template {times['template']:.3f} s")
        if args.times_only:
            return
        for name, alone in (("baseline (MLflow's own creation)", True), ("tunegate (ensure_store)", False)):
            outcomes = scan(folder / name.split()[0], args.every, alone)
            total = outcomes.pop("statements")
            points = sum(outcomes.values())
            print(f"{name}: {points} kill points over {total} statements: "
                  + ", ".join(f"{kind} {n}" for kind, n in sorted(outcomes.items())))


if __name__ == "__main__":
    main()
