"""Throughput of the overlap stage: what the exact pass adds to the dataset read, and the near pass.

    python benchmarks/overlap_throughput.py --sizes 50,200,400
    python benchmarks/overlap_throughput.py --sizes 5 --no-near      # a quick smoke run

For each train size (MB) it generates a seeded chat corpus plus a validation set of 10 % of that
size (with 1 % exact copies, 0.5 % case/space variants and 0.5 % one-word edits of train records)
into benchmarks/out/overlap/, then measures, each in a fresh subprocess so peak RSS is its own:
  read   the baseline: read and parse both files, no observers;
  exact  the same read feeding the fingerprint and overlap observers, then the exact matching;
  near   the MinHash LSH near-duplicate pass alone (gate.overlap defaults; it reads both files).
The exact pass's cost is reported as time added over `read` in the same run, per MB and as a
ratio; per-MB figures that stay flat across sizes show linear growth. The read goes through
tunegate.dataset.validate_dataset when that module exists, else through tunegate.dataset.records (the
output says which).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "overlap"
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from chat_corpus import variant  # noqa: E402

_SYLLABLES = "ka lo mi ne ru sa te vi po da fe gu hi jo ba ce lu mo ni re zo wa ye xi qu".split()
_SYSTEM = ["You are a concise support agent.", "Answer in the customer's language; under 150 words."]


def _vocabulary(rng: random.Random, size: int = 20000) -> list[str]:
    return ["".join(rng.choices(_SYLLABLES, k=rng.randint(1, 4))) for _ in range(size)]


def _record(rng: random.Random, words: list[str], ticket: int) -> dict:
    messages = [{"role": "system", "content": rng.choice(_SYSTEM)}] if rng.random() < 0.3 else []
    for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 4)):
        user = max(4, int(rng.lognormvariate(3.0, 0.6)))
        reply = max(4, int(rng.lognormvariate(4.4, 0.6)))
        messages.append({"role": "user", "content": f"Ticket {ticket}: " + " ".join(rng.choices(words, k=user))})
        messages.append({"role": "assistant", "content": " ".join(rng.choices(words, k=reply)).capitalize() + "."})
    return {"messages": messages}


def generate(train_mb: int, val_fraction: float, seed: int = 0) -> tuple[Path, Path]:
    """Write (or reuse) train_<N>mb.jsonl and its validation set; return their paths."""
    OUT.mkdir(parents=True, exist_ok=True)
    train, val = OUT / f"train_{train_mb}mb.jsonl", OUT / f"validation_{train_mb}mb.jsonl"
    if train.exists() and val.exists():
        return train, val
    rng = random.Random(seed)
    words = _vocabulary(rng)
    kept: list[dict] = []  # a reservoir of train records to copy into validation
    ticket = 0
    with open(train, "w", encoding="utf-8") as f:
        while f.tell() < train_mb * 1_000_000:
            record = _record(rng, words, ticket)
            ticket += 1
            if rng.random() < 0.02:
                kept.append(record)
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(val, "w", encoding="utf-8") as f:
        while f.tell() < train_mb * 1_000_000 * val_fraction:
            draw = rng.random()
            kind = "exact" if draw < 0.01 else "case" if draw < 0.015 else "edit" if draw < 0.02 else None
            record = variant(rng, rng.choice(kept), kind) if kind else _record(rng, words, ticket)
            ticket += 1
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return train, val


def _read(files: dict[str, Path], observers: list) -> str:
    try:
        from tunegate.dataset import validate_dataset
    except ImportError:
        from tunegate.dataset.split import feed_observers

        feed_observers(files, observers)
        return "tunegate.dataset.records"
    validate_dataset(files, cap=20, observers=observers)
    return "tunegate.dataset.stage"


def measure(mode: str, train: Path, val: Path) -> dict:
    """One mode in this process: wall and CPU seconds, peak RSS.

    CPU seconds (process time) are the figure to compare across sizes: the machine is shared, and
    waiting for a core inflates wall time but not CPU time.
    """
    from tunegate.dataset.fingerprint import FingerprintObserver
    from tunegate.overlap.exact import OverlapObserver
    from tunegate.overlap.near import find_near_duplicates
    from tunegate.overlap.stage import find_overlap
    from tunegate.spec.model import OverlapSpec

    files = {"train": train, "validation": val}
    if mode == "near":
        import numpy  # noqa: F401 - a fixed import, kept out of the per-MB figure
    wall, cpu = time.perf_counter(), time.process_time()
    result: dict = {"mode": mode}
    if mode == "near":  # the pass alone, as the stage runs it: validation indexed, train streamed
        spec = OverlapSpec()
        found = find_near_duplicates(files, "validation", threshold=spec.threshold,
                                     shingle_size=spec.shingle_size, num_perm=spec.num_perm)
        result.update(pairs=len(found.pairs), candidates=found.candidates)
    else:
        observer = OverlapObserver()
        observers = [] if mode == "read" else [FingerprintObserver({}, files), observer]
        result["reader"] = _read(files, observers)
        if mode == "exact":
            stage = find_overlap(files, observer, OverlapSpec(near_duplicates=False))
            result.update(stats=stage.stats, codes=stage.totals_by_code)
    result.update(wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
                  peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return result


def _run(mode: str, train: Path, val: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", mode, str(train), str(val)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def bench(size: int, val_fraction: float, near: bool) -> dict:
    train, val = generate(size, val_fraction)
    mb = (train.stat().st_size + val.stat().st_size) / 1e6
    read, exact = _run("read", train, val), _run("exact", train, val)
    row = {"train_mb": size, "mb": mb, "reader": read["reader"], "codes": exact["codes"],
           "records": exact["stats"]["train"]["records"] + exact["stats"]["validation"]["records"],
           "read": read, "exact": exact, "added_cpu": exact["cpu_s"] - read["cpu_s"],
           "added_wall": exact["wall_s"] - read["wall_s"]}
    if near:
        row["near"] = _run("near", train, val)
    return row


def report(rows: list[dict]) -> None:
    print(f"reader: {rows[0]['reader']}; MB = train + validation bytes; times are CPU seconds "
          "(wall in brackets)")
    print(f"{'train MB':>8} {'MB':>6} {'records':>8} {'read s':>13} {'+exact s':>13} {'exact/read':>10} "
          f"{'+exact ms/MB':>12} {'near s':>14} {'near ms/MB':>10} {'RSS MB read/exact/near':>23}")
    for r in rows:
        near = r.get("near", {})
        near_s = f"{near['cpu_s']:.2f} ({near['wall_s']:.1f})" if near else "-"
        near_mb = f"{1000 * near['cpu_s'] / r['mb']:.1f}" if near else "-"
        rss = f"{r['read']['peak_rss_mb']:.0f}/{r['exact']['peak_rss_mb']:.0f}/{near.get('peak_rss_mb', 0):.0f}"
        print(f"{r['train_mb']:>8} {r['mb']:>6.0f} {r['records']:>8} "
              f"{r['read']['cpu_s']:>6.2f} ({r['read']['wall_s']:>4.2f}) {r['added_cpu']:>6.2f} ({r['added_wall']:>4.2f}) "
              f"{r['exact']['cpu_s'] / r['read']['cpu_s']:>10.2f} {1000 * r['added_cpu'] / r['mb']:>12.1f} "
              f"{near_s:>14} {near_mb:>10} {rss:>23}")
    first = rows[0]
    for r in rows[1:]:  # CPU per MB relative to the smallest size: ~1.0 means linear growth
        def ratio(value: float, base: float) -> float:
            return (value / r["mb"]) / (base / first["mb"])
        near = (f", near x{ratio(r['near']['cpu_s'], first['near']['cpu_s']):.2f}" if "near" in r else "")
        print(f"CPU per MB at {r['train_mb']} MB vs {first['train_mb']} MB: read "
              f"x{ratio(r['read']['cpu_s'], first['read']['cpu_s']):.2f}, exact added "
              f"x{ratio(r['added_cpu'], first['added_cpu']):.2f}{near}")
    print("findings (largest size):", rows[-1]["codes"], "near pairs:", rows[-1].get("near", {}).get("pairs"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,200,400", help="train sizes in MB, comma-separated")
    parser.add_argument("--val-fraction", type=float, default=0.1, help="validation size as a fraction of train")
    parser.add_argument("--no-near", action="store_true", help="skip the near-duplicate pass")
    parser.add_argument("--measure", nargs=3, metavar=("MODE", "TRAIN", "VAL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        mode, train, val = args.measure
        print(json.dumps(measure(mode, Path(train), Path(val))))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    load = os.getloadavg()[0]
    report([bench(size, args.val_fraction, not args.no_near) for size in sizes])
    print(f"load average (1 min) before/after: {load:.1f}/{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
