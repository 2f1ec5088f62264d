"""The whole `tunegate check` command against the stdlib script it replaces, paired in one run.

    python benchmarks/check_cli.py                          # 50, 200, 400 MB; RSS at 1 GB; 3 rounds
    python benchmarks/check_cli.py --mb 20 --rounds 1 --rss-mb 0    # a quick look
    python benchmarks/check_cli.py --quickstart             # the small spec: approval, rejections
    python benchmarks/check_cli.py --short 1000000          # 1M short records (~100 MB: per-record costs)
    python benchmarks/check_cli.py --mb 1100 --index-records 64000   # memory of a big near-duplicate index
    python benchmarks/check_cli.py --mb "" --rss-mb 1100 --rss-rounds 5 --against /tmp/old   # peak memory only, 5 runs each
    python benchmarks/check_cli.py --mb 55,110 --rss-mb 0 --only baseline,check-w1,check-w2   # one process or two
    python benchmarks/check_cli.py --against /tmp/old       # also old-check, old-no-near: another checkout's
                                                            # tunegate (e.g. `git archive main | tar -x -C /tmp/old`)

For each size it generates (once, into benchmarks/out/check_cli/, gitignored) a multilingual chat
train file (benchmarks/chat_corpus.py) and a validation file of a tenth of its size, which holds
fresh records plus 1 % exact copies, 0.5 % case/space variants and 0.5 % one-word edits of train
records (so every overlap check has something to find). Then, interleaved round by round so
machine noise hits all alike, each as a fresh process:

  baseline   the source's validator: `json.loads` per non-empty line + the chat contract, both files
             (`python benchmarks/check_cli.py --baseline TRAIN VAL`);
  check      `tunegate check --train TRAIN --validation VAL --json` (every default: contract, stats,
             exact and normalised overlap, prompt leakage, near duplicates, fingerprints);
  no-near    the same with `gate.overlap.near_duplicates: false` (a spec naming the same files);
  start-up   the check command on the first 50 lines of each file: what every check costs before
             and after its records (interpreter, imports, spec, report), whatever the size;
  check-w1, check-w2   with --only: `check` read by one process (TUNEGATE_WORKERS=1) or by two
             (=2, whatever the load: the default drops to one on a busy machine), to see what the
             second process costs and gains at each size.

It prints the median wall and CPU (user + sys) seconds of each, the ratios against the baseline,
the per-stage split from tunegate's own report, and each command's peak RSS. Peak RSS is the
child's `ru_maxrss` measured by a small launcher process: Linux carries the parent's high-water
mark into a child across fork/vfork + exec, so the launcher must be small (~10 MB) itself. The
timed runs sample nothing while they run; the PSS of each command's whole process tree, sampled
every 20 ms, comes from one more, untimed run (sampling slowed the command it measured).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bytecode import compile_trees
from naive_contract import contract_problems

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "check_cli"
TUNEGATE = [sys.executable, "-m", "tunegate"]


# -- the baseline: what the source describes, written plainly ----------------------------------


def baseline(paths: list[str]) -> int:
    """json.loads on every non-empty line of each text-mode file, then the contract; exit 1 on a problem."""
    problems = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    problems += 1
                    continue
                problems += len(contract_problems(record))
    print(f"{problems} problem(s)")
    return 1 if problems else 0


# -- measuring one command in a fresh process ---------------------------------------------------


def launch(command: list[str], stdout: str, cwd: Path = ROOT, sample: bool = False) -> dict:
    """Run `command` (its stdout to a file); return wall, CPU (its worker processes included), the
    peak RSS of its largest process and, with `sample`, the peak, sampled every 20 ms, of the PSS
    summed over its process tree (the memory the command holds when it reads with several processes).

    Timed runs do not sample: reading a process's smaps_rollup walks its page tables under its
    memory lock, which slowed the measured command (~10 % more CPU at 400 MB on 2 cores, the most
    for the commands with several processes), so the PSS comes from a run of its own."""
    with open(stdout, "wb") as out, open(f"{stdout}.err", "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd)
        tree_peak = tree_rss = 0.0
        while sample:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            pss, rss = tree_memory_mb(child.pid)
            tree_peak, tree_rss = max(tree_peak, pss), max(tree_rss, rss)
            time.sleep(0.02)
        if not sample:
            pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    text = Path(f"{stdout}.err").read_text(errors="replace")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
            "tree_mb": tree_peak, "tree_rss_mb": tree_rss, "rc": os.waitstatus_to_exitcode(status),
            "stderr": text[-2000:]}


def tree_memory_mb(pid: int) -> tuple[float, float]:
    """(PSS, RSS) of a process and all its descendants, summed, in MB. PSS splits a shared page
    between its sharers; RSS counts it in each (a forked worker's pages shared with the gate twice)."""
    pss = rss = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) / 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) / 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue  # the process ended between two reads
    return pss, rss


def measure(command: list[str], stdout: Path, cwd: Path = ROOT, sample: bool = False) -> dict:
    """`launch` in a small fresh interpreter, so the child's peak RSS is its own. `python -m tunegate`
    imports the tunegate of `cwd` (the working directory comes first on sys.path)."""
    probe = [sys.executable, __file__, "--launch" if not sample else "--launch-sampled", str(stdout), str(cwd),
             *command]
    done = subprocess.run(probe, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


# -- the data -----------------------------------------------------------------------------------


def generate(train_mb: float, seed: int = 0) -> tuple[Path, Path]:
    """Write (or reuse) a train file of about `train_mb` MB and its validation file; return both paths."""
    sys.path.insert(0, str(HERE))
    import orjson
    from chat_corpus import record, variant

    OUT.mkdir(parents=True, exist_ok=True)
    train, val = OUT / f"train_{train_mb:g}mb.jsonl", OUT / f"validation_{train_mb:g}mb.jsonl"
    if train.exists() and val.exists():
        return train, val
    rng = random.Random(seed)
    kept: list[dict] = []  # a sample of train records to copy into validation
    written = ticket = 0
    with open(train, "wb", buffering=1 << 20) as f:
        while written < train_mb * 1_000_000:
            rec = record(rng, ticket)
            ticket += 1
            if rng.random() < 0.05 and len(kept) < 20_000:
                kept.append(rec)
            written += f.write(orjson.dumps(rec) + b"\n")
    written = 0
    with open(val, "wb", buffering=1 << 20) as f:
        while written < train_mb * 100_000:
            draw = rng.random()
            kind = "exact" if draw < 0.01 else "case" if draw < 0.015 else "edit" if draw < 0.02 else None
            rec = variant(rng, rng.choice(kept), kind) if kind else record(rng, ticket)
            ticket += 1
            written += f.write(orjson.dumps(rec) + b"\n")
    return train, val


def generate_short(records: int, seed: int = 0) -> tuple[Path, Path]:
    """A train file of `records` short chat records (a question and a one-line answer, ~100 bytes,
    as in classification or short-QA sets) and a validation file of 1 % as many, a tenth of them
    copies of train records, some with other case and spacing."""
    OUT.mkdir(parents=True, exist_ok=True)
    train, val = OUT / f"short_{records}.jsonl", OUT / f"short_validation_{records}.jsonl"
    if train.exists() and val.exists():
        return train, val
    rng = random.Random(seed)
    words = ["refund", "order", "late", "password", "reset", "invoice", "bitte", "pedido", "账户", "باز", "ok", "why"]

    def one() -> dict:
        q = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) + f" #{rng.randrange(10**9)}?"
        return {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": rng.choice(words)}]}

    kept = []
    with open(train, "w", encoding="utf-8") as f:
        for i in range(records):
            rec = one()
            if i % 1000 == 0:
                kept.append(rec)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(val, "w", encoding="utf-8") as f:
        for i in range(max(1, records // 100)):
            if i % 10 == 0 and kept:
                rec = json.loads(json.dumps(rng.choice(kept)))
                if i % 20 == 0:
                    rec["messages"][0]["content"] = "  " + rec["messages"][0]["content"].upper()
            else:
                rec = one()
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return train, val


def head(path: Path, lines: int = 50) -> Path:
    """The first `lines` lines of a generated file, beside it."""
    small = path.with_name(f"head{lines}_{path.name}")
    if not small.exists() or small.stat().st_mtime < path.stat().st_mtime:
        with open(path, "rb") as src, open(small, "wb") as dst:
            for _, line in zip(range(lines), src):
                dst.write(line)
    return small


def no_near_spec(train: Path, val: Path) -> Path:
    """A spec naming the same files with the near-duplicate pass off (the quickstart's other settings)."""
    text = (ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8")
    text = text.replace("data/train.jsonl", str(train)).replace("data/validation.jsonl", str(val))
    text += "gate:\n  overlap:\n    near_duplicates: false\n"
    path = OUT / f"no_near_{train.stem}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# -- the comparison -----------------------------------------------------------------------------


AGAINST: list[Path] = []  # --against: another checkout whose tunegate runs as old-check and old-no-near


def commands(train: Path, val: Path) -> dict[str, list[str]]:
    found = {"baseline": [sys.executable, __file__, "--baseline", str(train), str(val)],
             "check": [*TUNEGATE, "check", "--train", str(train), "--validation", str(val), "--json"],
             "no-near": [*TUNEGATE, "check", str(no_near_spec(train, val)), "--json"],
             "start-up": [*TUNEGATE, "check", "--train", str(head(train)), "--validation", str(head(val)), "--json"]}
    for workers in (1, 2):
        found[f"check-w{workers}"] = ["env", f"TUNEGATE_WORKERS={workers}", *found["check"]]
    if AGAINST:
        found["old-check"], found["old-no-near"] = found["check"], found["no-near"]
    return found


def workdir(name: str) -> Path:
    return AGAINST[0] if name.startswith("old-") else ROOT


def compare(train_mb: float, rounds: int, which: tuple[str, ...], files: tuple[Path, Path] | None = None) -> dict:
    """Every command `rounds` times, interleaved; the medians, the last report, the peak RSS."""
    train, val = files or generate(train_mb)
    runs: dict[str, list[dict]] = {name: [] for name in which}
    cmds = commands(train, val)
    for _ in range(rounds):
        for name in which:
            run = measure(cmds[name], OUT / f"{name}.out", workdir(name))
            if run["rc"] not in (0, 1):
                raise SystemExit(f"{name} failed (exit {run['rc']}): {run['stderr']}")
            runs[name].append(run)
    row = {"mb": (train.stat().st_size + val.stat().st_size) / 1e6, "train_mb": train_mb}
    for name, got in runs.items():
        row[name] = {key: statistics.median(r[key] for r in got) for key in ("wall", "cpu", "rss_mb")}
        row[name]["tree_mb"] = measure(cmds[name], OUT / f"{name}.sampled.out", workdir(name), sample=True)["tree_mb"]
        row[name]["rc"] = got[-1]["rc"]
        if name != "baseline":
            row[name]["report"] = json.loads((OUT / f"{name}.out").read_text(encoding="utf-8"))
    return row


def split(report: dict) -> str:
    """Per-stage seconds from the report, with the overlap stage's own parts."""
    parts = []
    for stage in report["stages"]:
        if stage["status"] == "skipped":
            continue
        text = f"{stage['name']} {stage['duration_s']:.2f}"
        timing = stage.get("stats", {}).get("timing_s")
        if timing:
            text += " (" + ", ".join(f"{k} {v:.2f}" for k, v in timing.items()) + ")"
        parts.append(text)
    return "; ".join(parts)


def verdict(report: dict) -> str:
    codes: dict[str, int] = {}
    for stage in report["stages"]:
        for code, n in stage.get("totals_by_code", {}).items():
            codes[code] = codes.get(code, 0) + n
    return f"approved={report['approved_for_full_run']} " + " ".join(f"{c}:{n}" for c, n in sorted(codes.items()))


def mb_per_s(row: dict, name: str) -> str:
    return "-" if name == "start-up" else f"{row['mb'] / row[name]['wall']:.0f}"  # start-up reads 50 lines


def show(row: dict) -> None:
    base = row["baseline"]
    print(f"\n{row['mb']:.0f} MB (train {row['train_mb']:g} MB + validation)")
    print(f"  {'command':<11} {'wall s':>7} {'CPU s':>7} {'wall x':>7} {'CPU x':>6} {'MB/s':>6} {'RSS MB':>7} "
          f"{'PSS all MB':>10}")
    for name in ("baseline", "check", "check-w1", "check-w2", "no-near", "old-check", "old-no-near", "start-up"):
        if name not in row:
            continue
        r = row[name]
        print(f"  {name:<11} {r['wall']:>7.2f} {r['cpu']:>7.2f} {r['wall'] / base['wall']:>7.2f} "
              f"{r['cpu'] / base['cpu']:>6.2f} {mb_per_s(row, name):>6} {r['rss_mb']:>7.0f} {r['tree_mb']:>10.0f}")
    if "start-up" in row and "check" in row:
        fixed, rest = row["start-up"]["wall"], row["check"]["wall"] - row["start-up"]["wall"]
        print(f"  check = start-up {fixed:.2f} s + records {rest:.2f} s: the records alone "
              f"{rest / base['wall']:.2f}x the baseline's wall")
    for name in ("check", "check-w1", "check-w2", "no-near", "old-check", "old-no-near"):
        if name in row:
            print(f"  {name} stages: {split(row[name]['report'])}")
            print(f"  {name} verdict: {verdict(row[name]['report'])}")


def rss_only(train_mb: float, rounds: int = 1) -> None:
    """Peak RSS (and one wall time) of the check and the baseline on a large file; with --against the
    other checkout's check too; `rounds` runs of each check (alternating which goes first) and
    their medians, a single run's summed RSS moving by +-5 MB."""
    train, val = generate(train_mb)
    cmds = commands(train, val)
    mb = (train.stat().st_size + val.stat().st_size) / 1e6
    checks = ["check", "old-check"] if AGAINST else ["check"]
    runs: dict[str, list[dict]] = {name: [] for name in ["baseline", *checks]}
    for i in range(max(1, rounds)):
        for name in (["baseline"] if i == 0 else []) + (checks if i % 2 == 0 else checks[::-1]):
            run = measure(cmds[name], OUT / f"{name}.out", workdir(name), sample=True)
            runs[name].append(run)
            print(f"  {mb:.0f} MB {name:<9} peak RSS {run['rss_mb']:>5.0f} MB, "
                  f"all processes' PSS {run['tree_mb']:>5.0f} MB, their RSS summed {run['tree_rss_mb']:>5.0f} MB "
                  f"(one run: {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU, exit {run['rc']})")
    if rounds > 1:
        for name in checks:
            got = runs[name]
            print(f"  {name:<9} medians of {len(got)}: PSS {statistics.median(r['tree_mb'] for r in got):.0f} MB, "
                  f"RSS summed {statistics.median(r['tree_rss_mb'] for r in got):.0f} MB "
                  f"({min(r['tree_rss_mb'] for r in got):.0f}-{max(r['tree_rss_mb'] for r in got):.0f})")


def long_line(gigabytes: float) -> None:
    """A file that is one line of `gigabytes` GB (a missing newline glued it together): TG228, in
    bounded time and memory."""
    path = OUT / f"one_line_{gigabytes:g}gb.jsonl"
    if not path.exists():
        chunk = b"x" * (1 << 24)
        with open(path, "wb") as f:
            f.write(b'{"messages": "')
            for _ in range(int(gigabytes * (1 << 30)) // len(chunk)):
                f.write(chunk)
            f.write(b'"}\n')
    run = measure([*TUNEGATE, "check", "--train", str(path), "--json"], OUT / "long_line.out", sample=True)
    codes = verdict(json.loads((OUT / "long_line.out").read_text(encoding="utf-8")))
    print(f"  one {path.stat().st_size / 1e9:.2f} GB line: {run['wall']:.2f} s wall, {run['cpu']:.2f} s CPU, peak RSS "
          f"{run['rss_mb']:.0f} MB, all processes' PSS {run['tree_mb']:.0f} MB, exit {run['rc']}: {codes}")


def index_memory(train_mb: float, records: int) -> None:
    """Peak memory of the check whose validation file holds `records` fresh records (a near-duplicate
    index of as many MinHash rows), in one process and in two (TUNEGATE_WORKERS=1, 2), paired with --against."""
    sys.path.insert(0, str(HERE))
    import orjson
    from chat_corpus import record

    train, _ = generate(train_mb)
    val = OUT / f"validation_{records}_records.jsonl"
    if not val.exists():
        rng = random.Random(7)
        with open(val, "wb", buffering=1 << 20) as f:
            for ticket in range(records):
                f.write(orjson.dumps(record(rng, 10_000_000 + ticket)) + b"\n")
    command = [*TUNEGATE, "check", "--train", str(train), "--validation", str(val), "--json"]
    print(f"  {train.stat().st_size / 1e6:.0f} MB train, {records} validation records ({val.stat().st_size / 1e6:.0f} MB)")
    for workers in ("1", "2"):
        os.environ["TUNEGATE_WORKERS"] = workers
        for name in ("check", *(("old-check",) if AGAINST else ())):
            run = measure(command, OUT / f"{name}.index.out", workdir(name), sample=True)
            print(f"  {name:<9} TUNEGATE_WORKERS={workers}: PSS over the tree {run['tree_mb']:>4.0f} MB, RSS summed "
                  f"{run['tree_rss_mb']:>4.0f} MB ({run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU, exit {run['rc']})")
    del os.environ["TUNEGATE_WORKERS"]


def quickstart(rounds: int) -> None:
    """The small spec through the CLI: approval, a rejection at the spec and one at the data stage
    (a bare train file that breaks the chat contract, beside the quickstart's validation file),
    median wall of `rounds` runs each."""
    small = {"approve": [*TUNEGATE, "check", "examples/quickstart.yaml"],
             "reject": [*TUNEGATE, "check", "examples/broken.yaml"],
             "reject-data": [*TUNEGATE, "check", "--train", "tests/data/dataset/bad/last_from_user.jsonl",
                             "--validation", "examples/data/validation.jsonl"]}
    names = [*small, *(f"old-{name}" for name in small if AGAINST)]  # --against: paired
    times: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            command = small[name.removeprefix("old-")]
            times[name].append(measure(command, OUT / f"{name}.out", workdir(name)))
    for name, runs in times.items():
        walls = sorted(r["wall"] for r in runs)
        print(f"  quickstart {name}: median {statistics.median(walls):.3f} s wall (min {walls[0]:.3f}), "
              f"CPU {statistics.median(r['cpu'] for r in runs):.3f} s, RSS {runs[-1]['rss_mb']:.0f} MB, "
              f"exit {runs[-1]['rc']}")
    for name in small if AGAINST else ():  # the stable figure on a shared machine: CPU, paired round by round
        ratios = [new["cpu"] / old["cpu"] for new, old in zip(times[name], times[f"old-{name}"])]
        print(f"  quickstart {name}: CPU {statistics.median(ratios):.2f}x the --against tree's (median of rounds)")
    print(f"  load average after: {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", default="50,200,400", help="train sizes in MB, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are shown")
    ap.add_argument("--rss-mb", type=float, default=1000, help="also peak RSS at this train size (0: skip)")
    ap.add_argument("--rss-rounds", type=int, default=1, help="peak-RSS runs of each check (and --against's), medians shown")
    ap.add_argument("--only", default="baseline,check,no-near,start-up", help="which commands to time")
    ap.add_argument("--quickstart", action="store_true", help="time only the quickstart approval and the two rejections")
    ap.add_argument("--long-line-gb", type=float, default=0, help="time only the rejection of one line this long")
    ap.add_argument("--short", type=int, default=0, help="time only a file of this many short records")
    ap.add_argument("--index-records", type=int, default=0,
                    help="memory only: the first --mb train file against a validation file of this many records")
    ap.add_argument("--against", type=Path, help="another checkout: its tunegate runs paired as old-check, old-no-near")
    args = ap.parse_args()
    if args.against:
        AGAINST.append(args.against.resolve())
        if args.only == ap.get_default("only"):
            args.only += ",old-check,old-no-near"
    OUT.mkdir(parents=True, exist_ok=True)
    compile_trees([ROOT, *AGAINST])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if args.quickstart:
        quickstart(max(args.rounds, 5))
        return
    if args.long_line_gb:
        long_line(args.long_line_gb)
        return
    if args.index_records:
        index_memory(float(args.mb.split(",")[0]), args.index_records)
        print(f"  load average after: {os.getloadavg()[0]:.1f}")
        return
    which = tuple(args.only.split(","))
    if args.short:
        train, val = generate_short(args.short)
        show(compare(train.stat().st_size / 1e6, args.rounds, which, (train, val)))
        return
    for mb in (float(x) for x in args.mb.split(",") if x):
        show(compare(mb, args.rounds, which))
    if args.rss_mb:
        print(f"\npeak RSS at {args.rss_mb:g} MB train:")
        rss_only(args.rss_mb, args.rss_rounds)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    # The two child roles take their arguments verbatim (a command line follows --launch).
    if sys.argv[1:2] == ["--baseline"]:
        raise SystemExit(baseline(sys.argv[2:]))
    if sys.argv[1:2] in (["--launch"], ["--launch-sampled"]):
        print(json.dumps(launch(sys.argv[4:], sys.argv[2], Path(sys.argv[3]), sys.argv[1] == "--launch-sampled")))
        raise SystemExit(0)
    main()
