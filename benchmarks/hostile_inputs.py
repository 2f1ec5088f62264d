"""Hostile inputs through the whole CLI command, each against a plain-library baseline in the same run.

    python benchmarks/hostile_inputs.py                 # 10M `{}` lines, the committed bombs, laughs, a big spec
    python benchmarks/hostile_inputs.py --lines 1000000  # a quick look
    python benchmarks/hostile_inputs.py --refusals       # issue 36's cases: each answered in seconds

Each row times `python -m tunegate ...` end to end (a fresh process, imports included) and a
baseline that does the naive thing with the same input in a fresh process:
- 10M `{}` lines: `tunegate lint` vs the source's loop (`json.loads` per line, nothing explained);
- gzip bombs (tests/data/dataset/hostile, 64 MiB each): `tunegate lint` vs the same loop over the
  inflated lines (what a reader without a bound does);
- billion laughs (10^6 values in 6 lines): `tunegate check` vs `yaml.safe_load` plus one walk of the
  result (`json.dumps`), which is where the aliases expand;
- a 10 MB spec (comments): `tunegate check` vs `yaml.safe_load`;
- one record of 100,000 turns, each after an assistant turn (TG209 on every one): `tunegate lint` vs
  the source's loop over it.
Prints seconds, the ratio tunegate/baseline and the exit code (1: rejected with a finding). Files go
to benchmarks/out/hostile/ (gitignored).

`--big N` runs every command that reads a dataset (check as train and as validation, lint, fingerprint,
convert, estimate, advise, samples) on a gzip of N valid short chat records (issue 36 measured 18.5 M),
each with its wall and CPU seconds and its peak RSS summed over the process tree (psutil, every 20 ms).

`--refusals` times instead the cases of issue 36 that hung or ended in an internal error, each in a
fresh process with a 60 s limit (`hang` past it): /proc/kmsg as the spec and as data, --html onto
a FIFO and onto the spec, stdout on /dev/full, lora.r 10**4000, num_perm 10**6, advise at micro
batch 2**63, a grid of 10^9 points, samples on a folder. No baseline: the answer is the exit code
(1 a finding, 2 a usage error) within a second or two.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "hostile"
BOMBS = ROOT / "tests" / "data" / "dataset" / "hostile"

JSON_LOOP = "import json,sys\nn=0\nfor line in open(sys.argv[1],'rb'):\n    json.loads(line); n+=1\nprint(n)"
GZIP_LOOP = ("import gzip,json,sys\nn=0\nfor line in gzip.open(sys.argv[1]):\n    if line.strip():\n"
             "        json.loads(line); n+=1\nprint(n)")
YAML_LOAD = "import yaml,sys\nyaml.safe_load(open(sys.argv[1]))"
YAML_USE = "import json,yaml,sys\nprint(len(json.dumps(yaml.safe_load(open(sys.argv[1])))))"


def timed(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    run = subprocess.run(argv, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start, run.returncode


def inputs(lines: int) -> list[tuple[str, list[str], list[str]]]:
    OUT.mkdir(parents=True, exist_ok=True)
    empty = OUT / f"empty-{lines}.jsonl"
    if not empty.exists():
        empty.write_bytes(b"{}\n" * lines)
    laughs = OUT / "laughs.yaml"
    rows = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"{c}: &{c} [{', '.join(['*' + p] * 10)}]" for p, c in zip("abcde", "bcdef")]
    laughs.write_text("\n".join(rows) + "\n")
    big = OUT / "big.yaml"
    big.write_text("data: {train: t.jsonl, validation: v.jsonl}\n" + ("# " + "x" * 98 + "\n") * 100_000)
    turns = OUT / "turns.jsonl"
    if not turns.exists():
        msgs = [{"role": "user", "content": "q"}] + [{"role": "assistant", "content": f"a{i}"} for i in range(100_000)]
        turns.write_text(json.dumps({"messages": msgs}) + "\n")
    tg = [sys.executable, "-m", "tunegate"]
    py = [sys.executable, "-c"]
    return [
        (f"{lines:,} `{{}}` lines", [*tg, "lint", str(empty)], [*py, JSON_LOOP, str(empty)]),
        *[(f"gzip bomb: {b.name}", [*tg, "lint", str(b)], [*py, GZIP_LOOP, str(b)])
          for b in sorted(BOMBS.glob("*.gz"))],
        ("billion laughs (10^6 values)", [*tg, "check", str(laughs)], [*py, YAML_USE, str(laughs)]),
        ("10 MB spec", [*tg, "check", str(big)], [*py, YAML_LOAD, str(big)]),
        ("one record of 100,000 bad turns", [*tg, "lint", str(turns)], [*py, JSON_LOOP, str(turns)]),
    ]


def refusals() -> list[tuple[str, list[str], str | None]]:
    """(case, argv, file for stdout) of each issue 36 case, its files made under OUT."""
    import os

    import yaml

    folder = OUT / "refusals"
    folder.mkdir(parents=True, exist_ok=True)
    flows = ROOT / "tests" / "data" / "flows"
    for name in ("train.jsonl", "validation.jsonl"):
        (folder / name).write_bytes((flows / name).read_bytes())
    base = yaml.safe_load((flows / "good.yaml").read_text())
    base.pop("sweep")

    def spec(name: str, section: str, **values: object) -> str:
        data = yaml.safe_load(yaml.safe_dump(base))
        data.setdefault(section, {}).update(values)
        (folder / name).write_text(yaml.safe_dump(data, width=1 << 20))
        return str(folder / name)

    grid = {f"training.{k}": list(range(1, 11)) for k in ("micro_batch_size", "grad_accum_steps", "max_steps",
                                                            "seed", "warmup_steps", "max_seq_len")}
    grid.update({key: list(range(1, 11)) for key in ("lora.r", "lora.alpha", "gate.max_findings_per_code")})
    fifo = folder / "fifo.html"
    if not fifo.exists():
        os.mkfifo(fifo)
    good = spec("good.yaml", "lora")
    tg = [sys.executable, "-m", "tunegate"]
    return [
        ("/proc/kmsg as the spec", [*tg, "check", "/proc/kmsg"], None),
        ("/proc/kmsg as data.train", [*tg, "estimate", spec("kmsg.yaml", "data", train="/proc/kmsg")], None),
        ("--html onto a FIFO", [*tg, "check", good, "--html", str(fifo)], None),
        ("--html onto the spec", [*tg, "check", good, "--html", good, "--force"], None),
        ("stdout on /dev/full", [*tg, "check", good], "/dev/full"),
        ("lora.r: 10**4000", [*tg, "estimate", spec("huge.yaml", "lora", r=10 ** 4000)], None),
        ("num_perm: 10**6", [*tg, "check", spec("perm.yaml", "gate", overlap={"num_perm": 10 ** 6})], None),
        ("advise, micro batch 2**63", [*tg, "advise", spec("mb.yaml", "training", micro_batch_size=2 ** 63)], None),
        ("a grid of 10^9 points", [*tg, "sweep", spec("grid.yaml", "sweep", strategy="grid", grid=grid)], None),
        ("samples on a folder", [*tg, "samples", spec("folder.yaml", "data", train=str(folder))], None),
    ]


def measured(argv: list[str], limit_s: float) -> tuple[float, float, float, object]:
    """(wall s, CPU s, peak MiB summed over the tree, exit code or "killed") of one command."""
    import resource

    import psutil

    sys.path.insert(0, str(ROOT))  # the poller the memory tests use
    from tests.support.peak_rss import tree_rss

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak, me = 0, psutil.Process(proc.pid)
    while proc.poll() is None and time.perf_counter() - start < limit_s:
        peak = max(peak, tree_rss(me))
        time.sleep(0.02)
    code: object = proc.poll()
    if code is None:
        for p in [*me.children(recursive=True), me]:
            p.kill()
        proc.wait()
        code = "killed"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, cpu, peak / 2 ** 20, code


def big_inputs(records: int) -> list[tuple[str, list[str]]]:
    """Each command that reads a dataset, on a gzip of `records` valid short chat records."""
    import gzip

    import yaml

    OUT.mkdir(parents=True, exist_ok=True)
    data = OUT / f"big-{records}.jsonl.gz"
    if not data.exists():
        with gzip.open(data.with_suffix(".part"), "wb", compresslevel=1) as out:
            for start in range(0, records, 100_000):
                out.write("".join(
                    f'{{"messages":[{{"role":"user","content":"question {i} about item {i * 7919 % 1000003}"}},'
                    f'{{"role":"assistant","content":"answer {i} for case {i * 104729 % 999983}"}}]}}\n'
                    for i in range(start, min(start + 100_000, records))).encode())
        data.with_suffix(".part").rename(data)
    flows = ROOT / "tests" / "data" / "flows"
    small = flows / "validation.jsonl"
    spec_data = yaml.safe_load((flows / "good.yaml").read_text())
    spec_data.pop("sweep")
    spec_data["data"].update(train=str(data), validation=str(small))
    spec = OUT / f"big-{records}.yaml"
    spec.write_text(yaml.safe_dump(spec_data))
    tg = [sys.executable, "-m", "tunegate"]
    return [
        ("check --train BIG", [*tg, "check", "--train", str(data), "--validation", str(small), "--json"]),
        ("check --validation BIG", [*tg, "check", "--train", str(small), "--validation", str(data), "--json"]),
        ("lint BIG", [*tg, "lint", str(data)]),
        ("fingerprint BIG", [*tg, "fingerprint", str(data)]),
        ("convert BIG", [*tg, "convert", str(data), str(OUT / f"big-{records}-out.jsonl"), "--to", "messages",
                         "--force"]),
        ("estimate (train BIG)", [*tg, "estimate", str(spec)]),
        ("advise --no-llm (train BIG)", [*tg, "advise", str(spec), "--no-llm"]),
        ("samples (train BIG)", [*tg, "samples", str(spec)]),
    ]


def time_big(records: int, limit_s: float) -> None:
    print(f"{records:,} records; load {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'command':30} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'exit':>6}")
    for name, argv in big_inputs(records):
        wall, cpu, peak, code = measured(argv, limit_s)
        print(f"{name:30} {wall:8.1f} {cpu:8.1f} {peak:9.0f} {code!s:>6}", flush=True)
    print(f"load {open('/proc/loadavg').read().split()[:3]}")


def time_refusals() -> None:
    print(f"{'case':34} {'seconds':>8} {'peak MiB':>9} {'exit':>5}")
    for name, argv, stdout in refusals():
        if stdout:  # the shell's redirection, as the issue ran it
            argv = ["sh", "-c", 'exec "$@" > ' + stdout, "sh", *argv]
        wall, _, peak, code = measured(argv, 60.0)
        print(f"{name:34} {wall:8.2f} {peak:9.0f} {('hang' if code == 'killed' else code)!s:>5}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--refusals", action="store_true", help="time issue 36's cases instead")
    parser.add_argument("--big", type=int, metavar="N", help="every dataset command on a gzip of N records")
    parser.add_argument("--limit-s", type=float, default=600.0, help="with --big: kill a command past this")
    args = parser.parse_args()
    if args.big:
        time_big(args.big, args.limit_s)
        return
    if args.refusals:
        time_refusals()
        return
    print(f"{'input':34} {'tunegate s':>10} {'exit':>4} {'baseline s':>10} {'ratio':>6}")
    for name, ours, baseline in inputs(args.lines):
        ours_s, code = timed(ours)
        base_s, _ = timed(baseline)
        print(f"{name:34} {ours_s:10.2f} {code:4d} {base_s:10.2f} {ours_s / base_s:6.2f}")


if __name__ == "__main__":
    main()
