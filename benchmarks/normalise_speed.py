"""The overlap stage's per-record normalisation alone, this checkout against another, in one process.

    python benchmarks/normalise_speed.py --against /tmp/base15          # the 50 MB check_cli corpus

Both read the same records (check_cli's train + validation files, generated there first); each
side's `normalise_record` is loaded from its own checkout's file, and what the hashes take (the
UTF-8 prompt, answer and whole text) is timed, best of `--repeat`, interleaved, in CPU seconds.
Also checks that both give the same bytes for every record.
"""
from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "out" / "check_cli"


def load(checkout: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, checkout / "tunegate" / "overlap" / "normalize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_bytes(module):
    """The record's normalised (prompt, answer, text) as UTF-8, from either API."""
    if hasattr(module, "normalise_record_bytes"):
        def run(record):
            norm = module.normalise_record_bytes(record)
            return norm and (norm.prompt, norm.answer, norm.text)
        return run

    def run_str(record):  # the str API of older checkouts, encoded as their observer did
        norm = module.normalise_record(record)
        if norm is None:
            return None
        answer = None if norm.answer is None else norm.answer.encode("utf-8", "surrogatepass")
        return norm.prompt.encode("utf-8", "surrogatepass"), answer, norm.text.encode("utf-8", "surrogatepass")
    return run_str


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, required=True, help="the other checkout")
    ap.add_argument("--mb", default="50", help="which check_cli corpus (train MB)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    files = [CORPUS / f"train_{args.mb}mb.jsonl", CORPUS / f"validation_{args.mb}mb.jsonl"]
    if not all(f.exists() for f in files):
        raise SystemExit(f"run `python benchmarks/check_cli.py --mb {args.mb} --rounds 1` first")
    records = [orjson.loads(line) for f in files for line in f.read_bytes().splitlines() if line.strip()]
    sides = {"this": as_bytes(load(HERE.parent, "this_normalize")),
             "other": as_bytes(load(args.against.resolve(), "other_normalize"))}
    best = dict.fromkeys(sides, float("inf"))
    outputs = {}
    for _ in range(args.repeat):
        for name, run in sides.items():
            start = time.process_time()
            outputs[name] = [run(r) for r in records]
            best[name] = min(best[name], time.process_time() - start)
    for name, seconds in best.items():
        print(f"{name:6s} {seconds:.3f} CPU s, {seconds / len(records) * 1e6:.1f} us a record ({len(records)} records)")
    print("same bytes for every record:", outputs["this"] == outputs["other"])


if __name__ == "__main__":
    main()
